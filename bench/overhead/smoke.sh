#!/bin/bash
# smoke.sh BUILD - a short first call on the GPU machine before the full overhead run
# (full.sh): the capture-range check (tests/gpu/capture_check.py: what the benchmark's paused
# blocks rely on) and one round of run.py on the tiny loop and the GPT with the modes that
# pause, to see their per-process times and pair spreads. Logs and traces under $OUT.
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
python3 "$here/../../tests/gpu/capture_check.py" "$build" "$out/capture" 2>&1 | tee "$out/capture.log"
python3 "$here/run.py" "$build" --programs tiny,gpt --modes none,floor,light,metrics,nsys \
	--rounds 1 --out "$out/run" 2>&1 | tee "$out/run.log" | tail -40
