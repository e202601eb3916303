#!/bin/sh
# metrics-host.sh APX APX_METRICS - `apx analyze --metrics` without a GPU: the metric sets and
# lists are checked with CUPTI's profiler host API for GH100 (the H200's chip; the host API
# needs no GPU), bad specifications are refused with the metric and the reason before anything
# runs (no trace left), and --metrics help lists the sets. Called by ctest (label integration).
set -u
apx=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tool=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
expect() {	# expect WHAT RC PATTERN -- COMMAND...: exit status RC and PATTERN in its output
	what=$1 rc=$2 pat=$3
	shift 4
	"$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" != "$rc" ] || ! grep -q -- "$pat" "$tmp/out"; then
		echo "FAIL: $what: exit $got (want $rc), output:"; cat "$tmp/out"; fail=1
	else
		echo "PASS: $what: $(grep -- "$pat" "$tmp/out" | head -1)"
	fi
}
expect "summary set, one pass on GH100" 0 "ok: summary: 8 metrics, 1 pass on GH100" -- \
	"$tool" check --chip GH100 summary
expect "throughput set, one pass on GH100" 0 "ok: throughput: 9 metrics, 1 pass on GH100" -- \
	"$tool" check --chip GH100 throughput
expect "own list" 0 "ok: custom: 2 metrics, 1 pass" -- \
	"$tool" check --chip GH100 dram__bytes_read.sum,sm__cycles_active.avg
expect "unknown metric named" 1 "metric 'dram__bogus.sum' is not known on GH100" -- \
	"$tool" check --chip GH100 dram__bytes_read.sum,dram__bogus.sum
expect "multi-pass metric refused with its pass count" 1 \
	"'sm__throughput.avg.pct_of_peak_sustained_elapsed' needs 19 passes" -- \
	"$tool" check --chip GH100 sm__throughput.avg.pct_of_peak_sustained_elapsed
expect "single-pass metrics that need passes together" 1 "need 2 passes together" -- \
	"$tool" check --chip GH100 sm__issue_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed
expect "unknown chip" 1 "does not know chip 'XX999'" -- "$tool" check --chip XX999 summary
expect "the replay set: 25 metrics, 12 passes of the range profiler" 0 \
	"ok: replay: 25 metrics, 12 passes on GH100" -- "$tool" check --chip GH100 --replay
expect "--replay-one-pass set: one pass of the range profiler" 0 \
	"ok: replay-one-pass: 4 metrics, 1 pass on GH100" -- \
	"$tool" check --chip GH100 --replay-one-pass
expect "range profiler: the L2 sector hits and misses take 2 passes together" 0 \
	"ok: custom: 2 metrics, 2 passes on GH100" -- \
	"$tool" check --chip GH100 --range \
	lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum
expect "list of a chip's metrics" 0 "base metrics on GH100" -- "$tool" list --chip GH100
cd "$tmp" || exit 1
expect "analyze: unknown set refused before running" 2 \
	"'sumary' is neither a metric set (summary, throughput)" -- "$apx" analyze --metrics=sumary -- true
expect "analyze: bad character in a list" 2 "character 0x3b is not part of a metric name" -- \
	"$apx" analyze --metrics-list 'dram__bytes_read.sum;x' -- true
expect "analyze: frequency out of range" 2 "from 1 to 10000, not '20000'" -- \
	"$apx" analyze --metrics --metrics-frequency 20000 -- true
expect "analyze: frequency without metrics" 2 "needs --metrics" -- \
	"$apx" analyze --metrics-frequency 100 -- true
expect "analyze: replay and metrics together refused" 2 "cannot run together" -- \
	"$apx" analyze --replay --metrics -- true
expect "analyze: --kernels without --replay" 2 "need --replay" -- "$apx" analyze --kernels gemm -- true
expect "analyze: --replay-flush without --replay" 2 "need --replay" -- "$apx" analyze --replay-flush -- true
expect "analyze: bad --kernels regex" 2 "not an extended regular expression" -- \
	"$apx" analyze --replay --kernels 'gemm(' -- true
expect "analyze: --replay-max 0" 2 "from 1 to 1000000, not '0'" -- "$apx" analyze --replay --replay-max 0 -- true
expect "analyze --metrics help lists the sets" 0 "throughput: SM issue" -- "$apx" analyze --metrics help
if [ -e data.apx ]; then echo "FAIL: a refused run left data.apx"; fail=1; fi
expect "analyze --metrics runs the program (no GPU: nothing sampled)" 0 "trace" -- \
	"$apx" analyze -f --metrics -- true
exit $fail
