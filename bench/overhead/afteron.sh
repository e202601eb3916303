#!/bin/bash
# afteron.sh BUILD [ROUNDS] - what the activity kinds leave behind once they have been on, on
# the GPU machine: afteron.py (host ns an op issues, GPU ns a kernel, before and after one
# collected block) in three modes, interleaved, ROUNDS rounds (default 2):
#   none       no injection (the control: "after" should equal "before")
#   floor      libapx-floor.so following cudaProfilerStart/Stop (APX_FLOOR_CAPTURE=1)
#   collector  libapx-inject.so at light with --capture-range=cudaProfilerApi
# Prints a table last: per mode and op group, after/before for host and GPU. Raw lines under $OUT.
set -u
build=$(cd "$1" && pwd)
rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
if ldd "$build/libapx-inject.so" | grep -q "not found"; then
	d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
	export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
raw=$out/afteron.raw
: > "$raw"
one() {	# one MODE ROUND
	local env=()
	case $1 in
	floor) env=(CUDA_INJECTION64_PATH="$build/libapx-floor.so" APX_FLOOR_CAPTURE=1) ;;
	collector) env=(CUDA_INJECTION64_PATH="$build/libapx-inject.so"
		APX_OUTPUT="$out/afteron-$2.apx" APX_LEVEL=light APX_CALIBRATE=0
		APX_CAPTURE=cudaProfilerApi) ;;
	esac
	env "${env[@]}" python3 "$here/afteron.py" 2>> "$out/afteron.err" |
		sed -n "s/^AFTERON /$1 $2 /p" >> "$raw"
}
for ((r = 0; r < rounds; r++)); do
	for m in $(printf '%s\n' none floor collector | shuf); do
		one "$m" "$r"
	done
done
python3 - "$raw" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, rnd, js = line.split(" ", 2)
    rows.setdefault(mode, []).append(json.loads(js))
m = statistics.median
def med(mode, ph, g, k):
    v = [r[ph][g][k] for r in rows.get(mode, []) if g in r[ph]]
    return m(v) if v else float("nan")
print("host ns an op / GPU ns an op (3 kernels early, 1 during and late), medians of processes")
print("%-10s %-7s %-26s %-26s %s" % ("mode", "group", "before host / gpu", "after host / gpu",
                                     "after / none's after (host, gpu)"))
for mode in ("none", "floor", "collector"):
    for g in ("early", "during", "late"):
        bh, bg = med(mode, "before", g, "host_ns"), med(mode, "before", g, "gpu_ns")
        ah, ag = med(mode, "after", g, "host_ns"), med(mode, "after", g, "gpu_ns")
        nh, ng = med("none", "after", g, "host_ns"), med("none", "after", g, "gpu_ns")
        print("%-10s %-7s %8.0f / %-15.0f %8.0f / %-15.0f %.3f, %.3f" % (
            mode, g, bh, bg, ah, ag, ah / nh, ag / ng))
    for r in rows.get(mode, []):
        print("%-10s drift: early host before %d, after %d, again %d" % (
            mode, r["before"]["early"]["host_ns"], r["after"]["early"]["host_ns"],
            r["before_again"]["early"]["host_ns"]))
EOF
