#!/bin/bash
# test-nvml.sh - nvperfd without libnvidia-ml (CI, no GPU): the daemon says once that NVML is
# not available, runs on, and the summary of a process says why there are no GPU metrics
# instead of giving zeros. With a GPU driver present the test checks the other line instead.
# Then with a stand-in libnvidia-ml.so.1 (fakenvml.c, through LD_LIBRARY_PATH): per-process
# memory, SM utilization, GPM means, "n/a" for what the driver does not give, gpu-idle.
# Needs: APX, NVPERFD, APXKV, FAKENVML.
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

# the stand-in NVML: one GPU, idle, whose processes are the pids in $T/gpupids
: > "$T/log"
: > "$T/gpupids"
write_conf "nvml = yes
threshold.min_runtime = 0
threshold.gpu_idle_pct = 50
threshold.sm_low_pct = 50
threshold.gpu_mem_pct = 1"
LD_LIBRARY_PATH=$(dirname "$FAKENVML") APX_FAKENVML_PIDS=$T/gpupids start_daemon
grep -q "NVML: 1 GPUs (Fake H200), GPM on 1" "$T/log" || fail "fake NVML not seen: $(grep NVML "$T/log")"
start_python 30
P=$LAST
echo "$P" > "$T/gpupids"
wait_for tracked "$P" || fail "$P not tracked"
sleep 1.5	# several samples (0.2 s), GPM pairs 110 ms apart or more
"$APX" status --json | grep -q "\"pid\":$P,.*\"uprobes\":\"[a-z]*\",.*\"gpu_mem_peak_bytes\":536870912" ||
	fail "apx status lacks the GPU memory: $("$APX" status --json | grep -o "\"pid\":$P,[^}]*")"
kill "$P"; wait "$P" 2>/dev/null
WAIT_S=5 wait_for count_files "$T/state/0" "*-$P-*.apx" 1 || fail "no summary for $P"
"$APXKV" "$T"/state/0/*-"$P"-*.apx > "$T/kv" || fail "apxkv"
for want in "nvperfd.nvml=yes" "nvperfd.gpu.device=0" "nvperfd.gpu.mem_peak_bytes=536870912" \
	    "nvperfd.gpu.sm_util_pct=42.0" "nvperfd.gpm.sm_util=3.00" "nvperfd.gpm.pcie_rx_mib_s=31.50"; do
	grep -qx "kv $want" "$T/kv" || fail "expected $want; got: $(grep "nvperfd.g" "$T/kv")"
done
grep -q "^kv nvperfd.gpm=device-wide, over [0-9]* samples where the process was the only one" "$T/kv" ||
	fail "GPM attribution not said"
grep -q "^finding gpu-idle 2 GPU 0 idle in 100% of the samples" "$T/kv" ||
	fail "no gpu-idle finding: $(grep ^finding "$T/kv")"
grep -q "^finding sm-low 1 mean SM utilization 42.0% on GPU 0 (threshold 50%)$" "$T/kv" ||
	fail "no sm-low finding: $(grep ^finding "$T/kv")"
grep -q "^finding gpu-mem 2 GPU 0 memory reached 1.2% of its total while the process ran (threshold 1%)$" \
	"$T/kv" || fail "no gpu-mem finding: $(grep ^finding "$T/kv")"
# the time series: METRIC records, only values the driver gave
[ "$(grep -c "^metric gpu.mem_bytes 0 $P 536870912 bytes$" "$T/kv")" -ge 3 ] ||
	fail "GPU memory series: $(grep ^metric "$T/kv" | head)"
grep -q "^metric gpu.util_pct 0 0 0 %$" "$T/kv" || fail "device utilization series"
grep -q "^metric gpu.sm_util_pct 0 $P 42 %$" "$T/kv" || fail "SM utilization series"
grep -q "^metric gpm.sm_util_pct 0 0 3 %$" "$T/kv" || fail "GPM series"
"$APX" report --color never "$T"/state/0/*-"$P"-*.apx >/dev/null 2>&1 || fail "apx report on a GPU summary"
"$APX" info "$T"/state/0/*-"$P"-*.apx >/dev/null || fail "apx info on a GPU summary"
stop_daemon
echo "ok"
