/*
 * libcalls_prog.c - the program of ctest libcalls: it loads the collector's stand-in
 * (libapx-pyhook-stub.so, its path in CUDA_INJECTION64_PATH: as CUDA loads the collector),
 * then the module that calls the fake cuBLAS and cuDNN (libapx-fakemod.so, argv[1]) with
 * dlopen RTLD_GLOBAL or RTLD_LOCAL (argv[2]: global or local), and runs its fakemod_work()
 * on two threads. Exit 0 when every call returned 0 (its arguments arrived), 1 when one did
 * not, 2 when something could not be loaded. Run with libapx-watch.so in LD_PRELOAD; the
 * check is libcalls_check.sh.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

static int (*work_fn)(void);

static void *work(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)work_fn();
}

int main(int argc, char **argv)
{
	const char *stub = getenv("CUDA_INJECTION64_PATH");
	pthread_t t;
	void *r1, *r2 = NULL, *mod;

	if (argc < 3) {
		fprintf(stderr, "usage: libcalls_prog MODULE global|local\n");
		return 2;
	}
	if (stub && !dlopen(stub, RTLD_NOW)) {
		fprintf(stderr, "libcalls_prog: cannot load %s: %s\n", stub, dlerror());
		return 2;
	}
	mod = dlopen(argv[1], RTLD_NOW | (strcmp(argv[2], "local") ? RTLD_GLOBAL : RTLD_LOCAL));
	if (!mod || !(*(void **)&work_fn = dlsym(mod, "fakemod_work"))) {
		fprintf(stderr, "libcalls_prog: cannot load %s: %s\n", argv[1], dlerror());
		return 2;
	}
	if (pthread_create(&t, NULL, work, NULL))
		return 2;
	r1 = work(NULL);
	pthread_join(t, &r2);
	if (r1 || r2) {
		fprintf(stderr, "libcalls_prog: a call's arguments did not arrive\n");
		return 1;
	}
	return 0;
}
