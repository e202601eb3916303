/*
 * test-pyhook.c - the Python hooks' ring (lib/collector/pyhook.c) without CUPTI or Python:
 * names registered once, ranges and samples through the exported apx_py_* functions, drained
 * by the writer into MARKER / METRIC / LOSS records of a real trace and read back with the
 * reader; a lapped ring counted; nothing accepted before publishing or in a forked child.
 * ctest unit-pyhook.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apx-test.h"
#include "collector/pyhook.h"

#include "base/banned.h"

struct got {
	uint64_t markers, metrics, loss, loss_count;
	uint64_t m_start, m_end, m_tid;
	char m_name[64], m_domain[64], other_domain[64];
	char metric_name[64], metric_unit[8];
	uint64_t metric_device, metric_pid, host_pid;
	double metric_value;
};

static void copy_str(struct apx_reader *r, uint64_t id, char *dst, size_t cap)
{
	size_t len = 0;
	const char *s = apx_reader_string(r, id, &len);

	dst[0] = 0;
	if (s && len < cap) {
		memcpy(dst, s, len);
		dst[len] = 0;
	}
}

static int read_back(const char *path, struct got *g)
{
	struct apx_reader *r;
	struct apx_diag d;

	memset(g, 0, sizeof(*g));
	if (apx_reader_open(path, &r, &d) < 0 || apx_reader_status(r) != APX_READ_COMPLETE)
		return -1;
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		struct apx_chunk_iter it;
		const struct apx_rec *rec = &it.rec;

		if (apx_chunk_iter_init(&it, r, i, &d) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &d) > 0) {
			if (rec->type == APX_REC_MARKER) {
				char dom[64];

				copy_str(r, rec->v[APX_MARKER_DOMAIN], dom, sizeof(dom));
				if (strcmp(dom, APX_PYHOOK_DOMAIN)) {
					memcpy(g->other_domain, dom, sizeof(dom));
					continue;
				}
				if (!g->markers++) {
					g->m_start = rec->v[APX_MARKER_START_NS];
					g->m_end = rec->v[APX_MARKER_END_NS];
					g->m_tid = rec->v[APX_MARKER_TID];
					copy_str(r, rec->v[APX_MARKER_NAME], g->m_name, sizeof(g->m_name));
					memcpy(g->m_domain, dom, sizeof(dom));
					if (rec->v[APX_MARKER_KIND] != APX_MARKER_RANGE)
						return -1;
				}
			} else if (rec->type == APX_REC_METRIC) {
				if (rec->v[APX_METRIC_PID]) {
					g->host_pid = rec->v[APX_METRIC_PID];
					g->metrics++;
					continue;
				}
				if (!g->metrics++) {
					copy_str(r, rec->v[APX_METRIC_NAME], g->metric_name,
						 sizeof(g->metric_name));
					copy_str(r, rec->v[APX_METRIC_UNIT], g->metric_unit,
						 sizeof(g->metric_unit));
					g->metric_device = rec->v[APX_METRIC_DEVICE];
					g->metric_value = apx_rec_f64(rec, APX_METRIC_VALUE);
				}
			} else if (rec->type == APX_REC_LOSS) {
				g->loss++;
				g->loss_count += rec->v[APX_LOSS_COUNT];
			}
		}
	}
	apx_reader_close(r);
	return 0;
}

/* A writer on a fresh temp file (path receives its name). */
static struct apx_writer *open_trace(char *path)
{
	struct apx_writer *w = NULL;
	struct apx_rec h;
	int fd;

	memcpy(path, "/tmp/apx-pyhook-XXXXXX", 23);
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	close(fd);
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "test-pyhook");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = (uint64_t)getpid();
	h.v[APX_HEADER_START_NS] = 1000;
	if (apx_writer_open(path, 1, &h, NULL, &w) < 0)
		return NULL;
	return w;
}

APX_TEST(nothing_before_publish)
{
	APX_ASSERT_EQ(apx_py_name("m:f", 3), -EAGAIN);
	APX_ASSERT_EQ(apx_py_range(1, 0, 1, 2, 3), -EAGAIN);
	APX_ASSERT_EQ(apx_py_metric(1, 0, 1.0, 5), -EAGAIN);
	APX_ASSERT_EQ(apx_py_lost(1), -EAGAIN);
	return 0;
}

APX_TEST(names_once)
{
	struct apx_pyhook *h = apx_pyhook_new();
	char longname[400];
	int a, b, c;

	APX_ASSERT(h);
	apx_pyhook_publish(h);
	a = apx_py_name("mod:func", 8);
	b = apx_py_name("mod:other", 9);
	c = apx_py_name("mod:func", 8);
	APX_ASSERT(a > 0 && b > 0 && a != b);
	APX_ASSERT_EQ(c, a);
	APX_ASSERT_EQ(apx_py_name("x", 0), -EINVAL);
	memset(longname, 'n', sizeof(longname));
	APX_ASSERT(apx_py_name(longname, sizeof(longname)) > 0);	/* cut, not refused */
	apx_pyhook_free(h);
	APX_ASSERT_EQ(apx_py_name("mod:func", 8), -EAGAIN);		/* unpublished by free */
	return 0;
}

APX_TEST(ranges_and_metrics_read_back)
{
	struct apx_pyhook *h = apx_pyhook_new();
	struct apx_pyhook_stats st;
	struct apx_writer *w;
	char path[32];
	struct got g;
	int f, dom, alloc, rss;

	APX_ASSERT(h);
	apx_pyhook_publish(h);
	w = open_trace(path);
	APX_ASSERT(w);
	f = apx_py_name("pkg.mod:Model.forward", 21);
	dom = apx_py_name("my.domain", 9);
	alloc = apx_py_name("torch.allocated_bytes", 21);
	rss = apx_py_name("process.rss_bytes", 17);
	APX_ASSERT(f > 0 && dom > 0 && alloc > 0 && rss > 0);
	APX_ASSERT_OK(apx_py_range((uint32_t)f, 0, 5000, 9000, 4242));
	APX_ASSERT_OK(apx_py_range((uint32_t)f, 0, 10000, 12000, 4242));
	APX_ASSERT_OK(apx_py_range((uint32_t)f, (uint32_t)dom, 20000, 21000, 7));
	APX_ASSERT_OK(apx_py_metric((uint32_t)alloc, 1, 123456789.0, 15000));
	APX_ASSERT_OK(apx_py_metric((uint32_t)rss, -1, 1e9, 15000));
	APX_ASSERT_OK(apx_py_range(999, 0, 1, 2, 3));		/* never registered: lost */
	APX_ASSERT_OK(apx_py_lost(5));
	apx_pyhook_drain(h, w, 30000, 1);
	apx_pyhook_stats(h, &st);
	APX_ASSERT_EQ(st.ranges, 3);
	APX_ASSERT_EQ(st.metrics, 2);
	APX_ASSERT_EQ(st.lost_ring, 1);
	APX_ASSERT_EQ(st.lost_python, 5);
	APX_ASSERT_OK(apx_writer_close(w, 40000, 0));
	APX_ASSERT_OK(read_back(path, &g));
	unlink(path);
	APX_ASSERT_EQ(g.markers, 2);
	APX_ASSERT_STREQ(g.m_name, "pkg.mod:Model.forward");
	APX_ASSERT_STREQ(g.m_domain, "apx.functions");
	APX_ASSERT_STREQ(g.other_domain, "my.domain");
	APX_ASSERT_EQ(g.m_start, 5000);
	APX_ASSERT_EQ(g.m_end, 9000);
	APX_ASSERT_EQ(g.m_tid, 4242);
	APX_ASSERT_EQ(g.metrics, 2);
	APX_ASSERT_STREQ(g.metric_name, "torch.allocated_bytes");
	APX_ASSERT_STREQ(g.metric_unit, "B");
	APX_ASSERT_EQ(g.metric_device, 1);
	APX_ASSERT(g.metric_value == 123456789.0);
	APX_ASSERT_EQ(g.host_pid, (uint64_t)getpid());
	APX_ASSERT_EQ(g.loss, 2);			/* one for the ring, one for Python's */
	APX_ASSERT_EQ(g.loss_count, 6);
	apx_pyhook_free(h);
	return 0;
}

APX_TEST(lapped_ring_counted)
{
	struct apx_pyhook *h = apx_pyhook_new();
	struct apx_pyhook_stats st;
	struct apx_writer *w;
	char path[32];
	struct got g;
	int f;

	APX_ASSERT(h);
	apx_pyhook_publish(h);
	w = open_trace(path);
	APX_ASSERT(w);
	f = apx_py_name("m:f", 3);
	for (uint64_t i = 0; i < APX_PYHOOK_SLOTS + 100; i++)
		APX_ASSERT_OK(apx_py_range((uint32_t)f, 0, 1000 + i, 1001 + i, 1));
	apx_pyhook_drain(h, w, 5000, 1);
	apx_pyhook_stats(h, &st);
	APX_ASSERT_EQ(st.ranges, APX_PYHOOK_SLOTS);
	APX_ASSERT_EQ(st.lost_ring, 100);
	APX_ASSERT_OK(apx_writer_close(w, 6000, 0));
	APX_ASSERT_OK(read_back(path, &g));
	unlink(path);
	APX_ASSERT_EQ(g.markers, APX_PYHOOK_SLOTS);
	APX_ASSERT_EQ(g.m_start, 1100);			/* the oldest 100 were lapped */
	APX_ASSERT_EQ(g.loss_count, 100);
	apx_pyhook_free(h);
	return 0;
}

APX_TEST(forked_child_drops)
{
	struct apx_pyhook *h = apx_pyhook_new();
	int status = 0;
	pid_t pid;

	APX_ASSERT(h);
	apx_pyhook_publish(h);
	APX_ASSERT(apx_py_name("m:f", 3) > 0);
	pid = fork();
	APX_ASSERT(pid >= 0);
	if (pid == 0)
		_exit(apx_py_range(1, 0, 1, 2, 3) == -EAGAIN && apx_py_name("m:g", 3) == -EAGAIN
		      ? 0 : 1);
	APX_ASSERT(waitpid(pid, &status, 0) == pid);
	APX_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	APX_ASSERT_OK(apx_py_range(1, 0, 1, 2, 3));	/* the parent still records */
	apx_pyhook_free(h);
	return 0;
}

APX_TEST_MAIN()
