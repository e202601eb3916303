#!/bin/bash
# replay_both.sh BUILD - kernel replay against ncu on the GPU machine, both pairings, in one
# device call: replay_check.py as is (apx --replay vs ncu --cache-control none: every counter,
# the DRAM ones of the one-pass launches against ncu's one-pass run) and with REPLAY_FLUSH=1
# (apx --replay --replay-flush vs ncu --cache-control all: the one-pass launches' DRAM
# counters, after apx's L2 sweep). Writes $OUT/replay/ (replay.apx, replay.log, ncu.csv,
# ncu-dram.csv: what tests/fixtures/hwc holds), $OUT/flush/ (the same but ncu.csv) and the two
# checks' logs, and prints both tables.
# run_all.sh runs the same two checks among the others.
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
if ldd "$build/libapx-inject.so" | grep -q "not found"; then
	d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
	export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
python3 "$here/replay_check.py" "$build" "$out/replay" >"$out/replay_check.log" 2>&1
rc=$?
REPLAY_FLUSH=1 python3 "$here/replay_check.py" "$build" "$out/flush" >"$out/replay_flush_check.log" 2>&1
frc=$?
echo "=== --replay (exit $rc): every check but the table's passes"
grep -v "^PASS    " "$out/replay_check.log" | grep -v "^  "
echo "=== --replay-flush (exit $frc):"
grep -v "^  " "$out/replay_flush_check.log"
echo "replay_check exit $rc, --replay-flush exit $frc"
[ $rc = 0 ] && [ $frc = 0 ]
