#!/bin/sh
# bench-export.sh - `bench/export`: seconds, peak memory and file size of `apx export` in each
# format on a generated trace of 10 million kernels (bench/report's generator: 64 kernels a
# step on 2 streams, 6 copies and a sync a step), beside the size each exporter said before
# writing; CPU s = user + system time (on a shared machine the wall time is not the cost).
# Formats left out of the build are skipped. Not run by ctest.
# Usage: bench/export/bench-export.sh BUILD_DIR [KERNELS] [SCRATCH_DIR]
set -eu
build=${1:?usage: bench-export.sh BUILD_DIR [KERNELS] [SCRATCH_DIR]}
n=${2:-10000000}
dir=${3:-/tmp}
trace=$dir/apx-bench-export.apx
trap 'rm -f "$trace" "$dir"/apx-bench-export.out* "$dir"/apx-bench-export.err' EXIT

# the generator also times apx report on it; its lines say what the trace holds
APX_BENCH_KEEP=1 "$build/bench/report/bench-report" "$build/apx" "$n" "$trace" | head -1
printf '  %-9s %9s %9s %10s %12s %12s\n' format seconds "CPU s" "file MB" "estimate MB" \
	"peak RSS MB"
for fmt in perfetto chrome sqlite; do
	out=$dir/apx-bench-export.out
	rm -f "$out"
	if ! /usr/bin/time -f '%e %U %S %M' -o "$dir/apx-bench-export.time" \
		"$build/apx" export --format "$fmt" -o "$out" "$trace" \
		2>"$dir/apx-bench-export.err"; then
		if grep -q "not built into" "$dir/apx-bench-export.err"; then
			printf '  %-9s %s\n' "$fmt" "not built into this apx"
			continue
		fi
		cat "$dir/apx-bench-export.err" >&2
		exit 1
	fi
	read -r secs user sys rss <"$dir/apx-bench-export.time"
	est=$(sed -n 's/.*(.*, about \([0-9.]*\) \([kMG]B\)).*/\1 \2/p' "$dir/apx-bench-export.err")
	printf '  %-9s %9s %9.2f %10.1f %12s %12.0f\n' "$fmt" "$secs" \
		"$(echo "$user $sys" | awk '{print $1 + $2}')" \
		"$(stat -c %s "$out" | awk '{print $1 / 1e6}')" \
		"$(echo "$est" | awk '{print $1 * ($2 == "GB" ? 1000 : $2 == "kB" ? 0.001 : 1)}')" \
		"$(echo "$rss" | awk '{print $1 / 1000}')"
	rm -f "$out" "$dir/apx-bench-export.time"
done
