#!/bin/bash
# launch_check.sh BUILD [REPS] - the launch-bound estimate, corrected for the collector's own
# cost per launch, against the saving a CUDA graph measures on the same tiny-kernel loop: one
# `apx analyze` run of programs.py tiny (with the calibration apx analyze does), then REPS
# interleaved runs of the plain loop and of its graph replay without a profiler. Prints the
# estimate and the measurement per step and their ratio (target: within 30 %).
set -u
build=$(cd "$1" && pwd)
reps=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
pin=${PIN:-}
export XDG_CACHE_HOME=$out/cache
$pin "$build/apx" analyze -q --force -o "$out/tiny_light.apx" -- python3 "$here/programs.py" tiny \
	>"$out/tiny_light.out" 2>&1
steps=$(awk '/^BENCH/ {print $4}' "$out/tiny_light.out")
"$build/apx" report --format json "$out/tiny_light.apx" >"$out/tiny_light.json"
"$build/apx" report "$out/tiny_light.apx" | grep -E "launch-bound|cost per launch|launch gaps" | head -5
for i in $(seq "$reps"); do
	$pin python3 "$here/programs.py" tiny | awk '{print "none", $3}'
	$pin python3 "$here/programs.py" tiny --graph | awk '{print "graph", $3}'
done >"$out/tiny_times.txt"
python3 - "$out/tiny_light.json" "$out/tiny_times.txt" "$steps" <<'PY'
import json, statistics, sys
doc = json.load(open(sys.argv[1]))
t = {"none": [], "graph": []}
for line in open(sys.argv[2]):
    k, v = line.split()
    t[k].append(float(v))
steps = int(sys.argv[3])
est = sum(f["saving_ns"] for f in doc["findings"] if f["rule"] == "launch-bound") / 1e6 / steps
meas = statistics.median(t["none"]) - statistics.median(t["graph"])
print(f"launch-bound: estimate {est:.3f} ms/step, measured {meas:.3f} ms/step "
      f"(none {t['none']}, graph {t['graph']}), ratio {est / meas:.2f}")
PY
