/*
 * test-store.c - unit tests of the event store (lib/analysis/store.h): entities (one device for
 * two processes of a host that name the same UUID, streams kept apart by file), the ordered
 * stream across types and files, correlation both ways, the --from/--to/--min-dur filters, the
 * device-memory series; and on the committed real traces: every kernel, copy and memset of the
 * files is in the store, counted independently with the reader.
 */
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "apx-test.h"
#include "analysis/store.h"
#include "unit/tracegen.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

static const uint8_t uuid_a[16] = { 0xfe, 0xbe, 0x1d, 0x6b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

/* A trace of process pid on host "node1": device 0 with uuid_a, then what the test adds. */
static int open_proc(struct tg *t, uint64_t pid)
{
	return tg_open_proc(t, "node1", pid, uuid_a);
}

APX_TEST(store_entities_order_and_correlation)
{
	struct tg a, b;
	struct apx_store *st;
	struct apx_store_iter it;
	enum apx_es_type type;
	size_t i, api_i, n = 0;
	uint64_t last = 0;
	const char *paths[2];

	APX_ASSERT_OK(open_proc(&a, 100));
	/* process 100: launches k1 (corr 1) and k2 (corr 2) on stream 7, in reverse record order */
	tg_kernel(&a, 5 * MS, 1 * MS, "k2", 7);		/* corr 1 in tracegen */
	tg_kernel(&a, 3 * MS, 1 * MS, "k1", 7);		/* corr 2 */
	tg_api(&a, 4 * MS + 500 * US, 4 * MS + 510 * US, 1, 11, "cudaLaunchKernel");
	tg_api(&a, 2 * MS + 500 * US, 2 * MS + 510 * US, 2, 11, "cudaLaunchKernel");
	tg_marker(&a, 2 * MS, 7 * MS, "step");
	tg_mem(&a, 2 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 1000);
	tg_mem(&a, 6 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 500);
	tg_mem(&a, 8 * MS, APX_MEMOP_FREE, APX_MEM_DEVICE, 1000);
	APX_ASSERT_OK(tg_close(&a));
	/* process 200 on the same host and GPU: its stream 7 is another stream */
	APX_ASSERT_OK(open_proc(&b, 200));
	tg_kernel(&b, 4 * MS, 2 * MS, "k1", 7);
	tg_api(&b, 3 * MS, 3 * MS + 10 * US, 1, 21, "cudaLaunchKernel");
	APX_ASSERT_OK(tg_close(&b));

	paths[0] = a.path;
	paths[1] = b.path;
	APX_ASSERT_OK(apx_store_open(paths, 2, NULL, &st, NULL));
	APX_ASSERT_EQ(st->nfiles, 2);
	APX_ASSERT_EQ(st->nhosts, 1);
	APX_ASSERT_EQ(st->ndevices, 1);		/* same host, same UUID */
	APX_ASSERT_EQ(st->nstreams, 2);		/* stream 7 of each process */
	APX_ASSERT_EQ(st->k.n, 3);
	APX_ASSERT_EQ(st->a.n, 3);
	APX_ASSERT_EQ(st->nstrings >= 3, 1);	/* k1, k2, cudaLaunchKernel (+ marker) */
	APX_ASSERT_EQ(st->k.start[0], 3 * MS);	/* sorted by start across files */
	APX_ASSERT_EQ(st->k.start[1], 4 * MS);
	APX_ASSERT_EQ(apx_store_file_of(st, APX_ES_KERNEL, 1), 1);
	APX_ASSERT_EQ(st->k.start[2], 5 * MS);

	apx_store_iter_init(&it);
	while (apx_store_next(st, &it, &type, &i)) {
		uint64_t s = apx_store_start(st, type, i);

		APX_ASSERT(s >= last);
		last = s;
		n++;
	}
	APX_ASSERT_EQ(n, st->events);
	APX_ASSERT_EQ(n, 3 + 3 + 1 + 3);	/* kernels, API calls, the range, memory samples */

	/* API calls by start: 2.5 ms (file 0, corr 2), 3 ms (file 1, corr 1), 4.5 ms (file 0,
	 * corr 1); kernels: k1 of file 0 (corr 2), k1 of file 1 (corr 1), k2 of file 0 (corr 1):
	 * the same correlation id in two processes joins each to its own kernel */
	APX_ASSERT_OK(apx_store_gpu_of_api(st, 0, &type, &i));
	APX_ASSERT(type == APX_ES_KERNEL && i == 0);
	APX_ASSERT_OK(apx_store_gpu_of_api(st, 1, &type, &i));
	APX_ASSERT(type == APX_ES_KERNEL && i == 1);
	APX_ASSERT_OK(apx_store_gpu_of_api(st, 2, &type, &i));
	APX_ASSERT(type == APX_ES_KERNEL && i == 2);
	APX_ASSERT_OK(apx_store_api_of_gpu(st, APX_ES_KERNEL, 1, &api_i));	/* file 1's k1 */
	APX_ASSERT_EQ(apx_store_start(st, APX_ES_API, api_i), 3 * MS);
	APX_ASSERT_OK(apx_store_api_of_gpu(st, APX_ES_KERNEL, 2, &api_i));	/* k2, corr 1 of file 0 */
	APX_ASSERT_EQ(apx_store_start(st, APX_ES_API, api_i), 4 * MS + 500 * US);

	/* device memory of process 100: 1000, 1500, 500 bytes */
	APX_ASSERT_EQ(st->ct.n, 3);
	APX_ASSERT(st->ct.value[0] == 1000 && st->ct.value[1] == 1500 && st->ct.value[2] == 500);
	APX_ASSERT(st->series[st->ct.series[0]].is_memory);
	apx_store_free(st);

	/* filters: [3.9 ms, 4.6 ms) after the run's start (1 ms), events of 100 us or more */
	{
		struct apx_store_opts o = { .from_ns = 2900 * US, .to_ns = 3600 * US, .min_dur_ns = 100 * US };

		APX_ASSERT_OK(apx_store_open(paths, 2, &o, &st, NULL));
		APX_ASSERT_EQ(st->k.n, 2);	/* both k1 (3-4 ms, 4-6 ms); k2 starts at 5 ms */
		APX_ASSERT_EQ(st->a.n, 0);	/* 10 us calls are under --min-dur */
		APX_ASSERT_EQ(st->mk.n, 1);	/* the step range overlaps the window */
		APX_ASSERT_EQ(st->ct.n, 0);	/* memory samples at 2, 6 and 8 ms */
		APX_ASSERT(st->files[0].skipped > 0);
		apx_store_free(st);
	}
	unlink(a.path);
	unlink(b.path);
	return 0;
}

/* Kernel, copy and memset records of a file, counted straight from the reader. */
static void count_gpu(const char *path, uint64_t *k, uint64_t *c, uint64_t *s)
{
	struct apx_reader *r;

	if (apx_reader_open(path, &r, NULL) < 0)
		return;
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		const struct apx_chunk_info *ci = apx_reader_chunk(r, i);

		*k += ci->type == APX_REC_KERNEL ? ci->records : 0;
		*c += ci->type == APX_REC_MEMCPY ? ci->records : 0;
		*s += ci->type == APX_REC_MEMSET ? ci->records : 0;
	}
	apx_reader_close(r);
}

APX_TEST(store_keeps_every_event_of_the_real_traces)
{
	const char *dir = APX_SOURCE_DIR "/tests/fixtures/real";
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t files = 0;

	APX_ASSERT(d);
	while ((de = readdir(d))) {
		char path[512];
		const char *p = path;
		struct apx_store *st;
		uint64_t k = 0, c = 0, s = 0, last = 0;
		size_t n = 0, i;
		struct apx_store_iter it;
		enum apx_es_type type;

		if (!strstr(de->d_name, ".apx"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		count_gpu(path, &k, &c, &s);
		APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
		APX_ASSERT_EQ(st->k.n, k);
		APX_ASSERT_EQ(st->c.n, c);
		APX_ASSERT_EQ(st->s.n, s);
		apx_store_iter_init(&it);
		while (apx_store_next(st, &it, &type, &i)) {
			APX_ASSERT(apx_store_start(st, type, i) >= last);
			APX_ASSERT(apx_store_end(st, type, i) >= apx_store_start(st, type, i));
			last = apx_store_start(st, type, i);
			n++;
		}
		APX_ASSERT_EQ(n, st->events);
		for (i = 0; i < st->k.n; i++)
			APX_ASSERT(st->streams[st->k.stream[i]].device < st->ndevices);
		apx_store_free(st);
		files++;
	}
	closedir(d);
	APX_ASSERT(files >= 20);
	return 0;
}

APX_TEST_MAIN()
