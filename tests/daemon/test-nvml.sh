#!/bin/bash
# test-nvml.sh - nvperfd without libnvidia-ml (CI, no GPU): the daemon says once that NVML is
# not available, runs on, and the summary of a process says why there are no GPU metrics
# instead of giving zeros. With a GPU driver present the test checks the other line instead.
# Needs: APX, NVPERFD, APXKV.
. "$(dirname "$0")/lib.sh"

write_conf "nvml = yes"
start_daemon
start_python 30
P=$LAST
wait_for tracked "$P" || fail "$P not tracked"
sleep 0.5
kill "$P"; wait "$P" 2>/dev/null
WAIT_S=5 wait_for count_files "$T/state/0" "*-$P-*.apx" 1 || fail "no summary for $P"
"$APXKV" "$T"/state/0/*-"$P"-*.apx > "$T/kv" || fail "apxkv"
if grep -q "NVML not available" "$T/log"; then
	[ "$(grep -c 'NVML not available' "$T/log")" = 1 ] || fail "NVML unavailability said more than once"
	grep -q "^kv nvperfd.nvml=unavailable: " "$T/kv" || fail "summary lacks why: $(grep nvml "$T/kv")"
	grep -q "^kv nvperfd.gpu\." "$T/kv" && fail "GPU values written without NVML"
else
	grep -q "NVML: [0-9]* GPUs" "$T/log" || fail "no NVML line"
	grep -q "^kv nvperfd.nvml=" "$T/kv" || fail "summary lacks nvperfd.nvml"
fi
# the daemon kept running, and nvml = no is said as such
kill -0 "$(cat "$T/pid")" || fail "daemon died"
stop_daemon
write_conf "nvml = no"
start_daemon
grep -q "NVML: off (nvml = no)" "$T/log" || fail "nvml = no not said"
stop_daemon
echo "ok"
