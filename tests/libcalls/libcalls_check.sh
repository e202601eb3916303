#!/bin/sh
# libcalls_check.sh - ctest libcalls: libapx-watch.so's cuBLAS/cuDNN wrappers (libcalls.c)
# against fake libraries (fakelibs.c) and the collector's stand-in (tests/pyhook's stub, which
# writes the ranges it got into a trace at exit). With APX_LIBCALLS=cublas,cudnn the trace has,
# per thread (2), 3 cublasGemmEx ranges (their inner cublasLtMatmul not again), 2
# cublasLtMatmul and 1 cudnnBackendExecute, each at least as long as the fake sleeps, in the
# domains cuBLAS and cuDNN, and apx report lists them among the NVTX ranges (not as steps); with
# APX_LIBCALLS=cublas no cuDNN range; with none no range at all; every run exits 0 (the
# arguments arrived). The module calling the libraries is loaded RTLD_GLOBAL (the libraries in
# the global scope) and, for the first case again, RTLD_LOCAL (as Python loads libtorch_cuda:
# the wrappers must still find the libraries' own functions). Usage:
# libcalls_check.sh PROG MODULE_SO WATCH_SO STUB_SO APX_DUMP APX
set -eu
prog=$1 mod=$2 watch=$3 stub=$4 dump=$5 apx=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
run() {	# $1: APX_LIBCALLS, $2: trace, $3: global or local
	APX_LIBCALLS=$1 APX_PYHOOK_STUB_OUT=$2 CUDA_INJECTION64_PATH=$stub LD_PRELOAD=$watch \
		"$prog" "$mod" "${3:-global}"
}
count() {	# $1 trace, $2 domain, $3 name, $4 min duration ns
	"$dump" "$1" | grep '"type":"marker"' | grep "\"domain\":\"$2\"" | grep "\"name\":\"$3\"" |
		sed 's/.*"start_ns":\([0-9]*\),"end_ns":\([0-9]*\).*/\1 \2/' |
		awk -v min="$4" '$2 - $1 >= min { n++ } END { print n + 0 }'
}
expect() {	# what got want
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: $2, expected $3"
		fail=1
	else
		echo "ok: $1: $2"
	fi
}
run cublas,cudnn "$tmp/all.apx"
expect "cublasGemmEx ranges >= 3 ms (inner cublasLtMatmul not counted)" \
	"$(count "$tmp/all.apx" cuBLAS cublasGemmEx 3000000)" 6
expect "cublasLtMatmul ranges >= 2 ms" "$(count "$tmp/all.apx" cuBLAS cublasLtMatmul 2000000)" 4
expect "cudnnBackendExecute ranges >= 3 ms" \
	"$(count "$tmp/all.apx" cuDNN cudnnBackendExecute 3000000)" 2
expect "ranges in all" "$("$dump" "$tmp/all.apx" | grep -c '"type":"marker"')" 12
expect "ranges on both threads (their own OS ids)" \
	"$("$dump" "$tmp/all.apx" | grep '"type":"marker"' | sed 's/.*"tid":\([0-9]*\).*/\1/' | sort -u | wc -l)" 2
"$apx" report --format json "$tmp/all.apx" > "$tmp/all.json"
expect "apx report's NVTX rows name cublasGemmEx" \
	"$(grep -c '"name":"cublasGemmEx"' "$tmp/all.json" | awk '{ print ($1 > 0) }')" 1
expect "library calls are not steps" \
	"$(grep -c '"steady_state":{"source":"nvtx"' "$tmp/all.json" || true)" 0
run cublas,cudnn "$tmp/local.apx" local
expect "RTLD_LOCAL: cublasGemmEx ranges" "$(count "$tmp/local.apx" cuBLAS cublasGemmEx 3000000)" 6
expect "RTLD_LOCAL: ranges" "$("$dump" "$tmp/local.apx" | grep -c '"type":"marker"')" 12
run cublas "$tmp/cublas.apx"
expect "cuDNN ranges with APX_LIBCALLS=cublas" "$(count "$tmp/cublas.apx" cuDNN cudnnBackendExecute 0)" 0
expect "cuBLAS ranges with APX_LIBCALLS=cublas" "$("$dump" "$tmp/cublas.apx" | grep -c '"domain":"cuBLAS"')" 10
run none "$tmp/none.apx"
expect "ranges with APX_LIBCALLS=none" "$("$dump" "$tmp/none.apx" | grep -c '"type":"marker"' || true)" 0
exit $fail
