#!/bin/bash
# apicost.sh BUILD [ROUNDS] - which CUDA calls being attached makes dearer, on the GPU
# machine: apx-apicost (apicost.c: the host ns of single calls an eager PyTorch op makes) in
# seven modes, interleaved, ROUNDS rounds (default 3), each mode's order shuffled per round:
#   none          no injection
#   cupti-loaded  libapx-floor.so injected, no activity kind, no subscriber
#   cupti-idle    the same with a subscriber of cuProfilerStart/Stop (what a paused
#                 --capture-range run keeps)
#   floor         libapx-floor.so with its default kinds (kernel, memcpy, memset) on
#   collector     libapx-inject.so, apx analyze's light level (trace under $OUT)
#   floor-paused  the floor following cudaProfilerStart/Stop, its kinds on for one block of
#                 launches before the timing and off during it (APX_APICOST_TOGGLE=1): whether
#                 kinds once on leave a cost behind after they are switched off
#   collector-paused  the same for the collector (--capture-range=cudaProfilerApi): a paused
#                 block of run.py's in-process pairs
# Prints each call's median ns a mode over the rounds, and the mode's excess over none.
# Logs and the raw lines under $OUT (or a temp folder).
set -u
build=$(cd "$1" && pwd)
rounds=${2:-3}
out=${OUT:-$(mktemp -d)}
bin=$build/apx-apicost
[ -x "$bin" ] || { echo "apicost.sh: no $bin (built with the collector)" >&2; exit 2; }
if ldd "$build/libapx-inject.so" | grep -q "not found"; then
	d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
	export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
modes=(none cupti-loaded cupti-idle floor floor-paused collector collector-paused)
raw=$out/apicost.raw
: > "$raw"
one() {	# one MODE ROUND: a process of apx-apicost, its lines prefixed with the mode
	local env=()
	case $1 in
	cupti-loaded) env=(CUDA_INJECTION64_PATH="$build/libapx-floor.so" APX_FLOOR_KINDS=none) ;;
	cupti-idle) env=(CUDA_INJECTION64_PATH="$build/libapx-floor.so" APX_FLOOR_KINDS=none
		APX_FLOOR_CAPTURE=1) ;;
	floor) env=(CUDA_INJECTION64_PATH="$build/libapx-floor.so") ;;
	collector) env=(CUDA_INJECTION64_PATH="$build/libapx-inject.so"
		APX_OUTPUT="$out/apicost-$2.apx" APX_LEVEL=light APX_CALIBRATE=0) ;;
	floor-paused) env=(CUDA_INJECTION64_PATH="$build/libapx-floor.so" APX_FLOOR_CAPTURE=1
		APX_APICOST_TOGGLE=1) ;;
	collector-paused) env=(CUDA_INJECTION64_PATH="$build/libapx-inject.so"
		APX_OUTPUT="$out/apicost-p$2.apx" APX_LEVEL=light APX_CALIBRATE=0
		APX_CAPTURE=cudaProfilerApi APX_APICOST_TOGGLE=1) ;;
	esac
	env "${env[@]}" "$bin" 2>> "$out/apicost.err" | sed "s/^/$1 $2 /" >> "$raw"
}
for ((r = 0; r < rounds; r++)); do
	for m in $(printf '%s\n' "${modes[@]}" | shuf); do
		one "$m" "$r"
	done
done
python3 - "$raw" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, _, call, ns = line.split()
    rows.setdefault(call, {}).setdefault(mode, []).append(int(ns))
modes = ["none", "cupti-loaded", "cupti-idle", "floor", "floor-paused", "collector",
         "collector-paused"]
print("ns a call, median of the rounds (+ the excess over none)")
print(f"{'call':26}" + "".join(f"{m:>20}" for m in modes))
for call, by in rows.items():
    base = statistics.median(by.get("none", [0]))
    cells = []
    for m in modes:
        v = statistics.median(by[m]) if m in by else float("nan")
        cells.append(f"{v:8.0f}" + (f" ({v - base:+6.0f})" if m != "none" else " " * 9))
    print(f"{call:26}" + "".join(f"{c:>20}" for c in cells))
EOF
