#!/bin/bash
# ablate.sh BUILD [ROUNDS] - prices each part of the collector on the GPU machine: the floor
# with one CUPTI feature or setting at a time, and light with one feature or kind off (run.py's
# per-feature modes), on the tiny-kernel loop and the GPT loop; prints the clock source and
# the cost of one clock_gettime first (the timestamp callback calls it). Each process pairs
# paused and collected blocks (run.py --toggle), so one round (the default, about 7 minutes)
# gives 6 pairs a mode; the "in one process" table is the one to read. Logs under $OUT.
set -u
build=$(cd "$1" && pwd)
rounds=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
if ldd "$build/libapx-inject.so" | grep -q "not found"; then
	d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
	export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
python3 -c 'import time
t=time.perf_counter_ns(); n=200000
for _ in range(n): time.monotonic_ns()
print("clock_gettime via python: %.0f ns" % ((time.perf_counter_ns()-t)/n))'
echo "calibrate plain:    $("$build/apx-calibrate")"
echo "calibrate injected: $(CUDA_INJECTION64_PATH=$build/libapx-inject.so APX_OUTPUT=/tmp/cal.apx "$build/apx-calibrate")"
echo "calibrate floor:    $(CUDA_INJECTION64_PATH=$build/libapx-floor.so "$build/apx-calibrate")"
PYTHONUNBUFFERED=1 python3 "$here/run.py" "$build" --out "$out" --rounds "$rounds" \
	--programs "${PROGRAMS:-tiny,gpt}" \
	--modes "${MODES:-none,floor,floor-light,floor-sync,floor-clock,floor-attrs,floor-pinned,floor-shared,light,light-direct,light-oldsync,light-noclock,light-noattrs,light-nocallbacks,light-nodecode,light-nouvm,light-kernel,graph}" \
	2>&1 | tee "$out/ablate.log"
