#!/bin/bash
# test-nvml.sh - nvperfd without libnvidia-ml (CI, no GPU): the daemon says once that NVML is
# not available, runs on, and the summary of a process says why there are no GPU metrics
# instead of giving zeros. With a GPU driver present the test checks the other line instead.
# Then with a stand-in libnvidia-ml.so.1 (fakenvml.c, through LD_LIBRARY_PATH): per-process
# memory, SM utilization, GPM means, "n/a" for what the driver does not give, gpu-idle; the
# GPU's idle share so far in apx status --json; and the GPU columns of the apx status / apx
# top tables: the stand-in's values (IDLE% 100), "-" for a process not on the GPU and for
# every process without NVML, lines within 80, 120 and 200 columns.
# Needs: APX, NVPERFD, APXKV, FAKENVML.
. "$(dirname "$0")/lib.sh"

write_conf "nvml = yes"
start_daemon
start_python 30
P=$LAST
wait_for tracked "$P" || fail "$P not tracked"
sleep 0.5
COLUMNS=120 "$APX" status > "$T/table" || fail "apx status"
kill "$P"; wait "$P" 2>/dev/null
WAIT_S=5 wait_for count_files "$T/state/0" "*-$P-*.apx" 1 || fail "no summary for $P"
"$APXKV" "$T"/state/0/*-"$P"-*.apx > "$T/kv" || fail "apxkv"
if grep -q "NVML not available" "$T/log"; then
	# the GPU columns say "not known", no device line
	grep -q "^ *$P root .* [0-9]   -     -    -     -            -        - python3 -c impor$" \
		"$T/table" || fail "GPU columns without NVML: $(cat "$T/table")"
	grep -q "^GPU" "$T/table" && fail "a device line without NVML: $(cat "$T/table")"
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
start_python 30		# tracked, not on the GPU
Q=$LAST
echo "$P" > "$T/gpupids"
wait_for tracked "$P" || fail "$P not tracked"
wait_for tracked "$Q" || fail "$Q not tracked"
sleep 1.5	# several samples (0.2 s), GPM pairs 110 ms apart or more
"$APX" status --json | grep -q "\"pid\":$P,.*\"uprobes\":\"[a-z]*\",.*\"gpu_mem_peak_bytes\":536870912,\"gpu_device\":0,\"gpu_count\":1,\"gpu_mem_bytes\":536870912,\"sm_util_pct\":42," ||
	fail "apx status lacks the GPU memory: $("$APX" status --json | grep -o "\"pid\":$P,[^}]*")"
# the GPU's idle share so far: the stand-in's utilization is always 0, so every sample where
# P held the GPU was idle (100 %, as the gpu-idle finding will say); no uprobes on P: L2 and
# the pageable rate not known
"$APX" status --json | grep -Eq "\"pid\":$P,[^}]*\"sm_util_pct\":42,\"gpu_samples\":([1-9][0-9]*),\"gpu_idle_samples\":\\1,\"l2_persist_bytes\":null,\"l2_windows\":null,\"h2d_pageable_call_ns\":null,\"cpu_pct\":[0-9.]*,\"gpu_idle_pct\":100.0,\"h2d_pageable_bytes_per_s\":null}" ||
	fail "apx status: idle share of $P: $("$APX" status --json | grep -o "\"pid\":$P,[^}]*}")"
"$APX" status --json | grep -q "\"pid\":$Q,[^}]*\"gpu_mem_peak_bytes\":null,\"gpu_device\":null,\"gpu_count\":0,\"gpu_mem_bytes\":null,\"sm_util_pct\":null,\"gpu_samples\":0,\"gpu_idle_samples\":0,[^}]*\"gpu_idle_pct\":null," ||
	fail "apx status: $Q off the GPU: $("$APX" status --json | grep -o "\"pid\":$Q,[^}]*")"
"$APX" status --json | grep -q '"gpus":\[{"index":0,"name":"Fake H200","util_pct":0,"mem_used_bytes":1073741824,"mem_total_bytes":85899345920,"power_mw":null}\]' ||
	fail "apx status: device: $("$APX" status --json | grep -o '"gpus":.*')"
# the tables: a device line, then the GPU columns (GPU, GMEM, SM%, IDLE%; H2D and L2: no
# uprobes on these processes, so "-"); every line within the width; columns drop from the
# right of the list
for w in 80 120 200; do
	COLUMNS=$w "$APX" status --sort pid > "$T/table.$w" || fail "apx status at $w"
	awk -v w="$w" 'length > w { exit 1 }' "$T/table.$w" || fail "wider than $w: $(cat "$T/table.$w")"
	grep -qx "GPU0 Fake H200  util 0%  mem 1.0/80.0 GiB  power -" "$T/table.$w" ||
		fail "no device line at $w: $(cat "$T/table.$w")"
done
t200=$T/table.200 t120=$T/table.120 t80=$T/table.80
grep -qx "    PID USER         AGE   CPU%   RSS  PEAK CSW vol/inv  THR S CUDA GPU  GMEM  SM% IDLE%          H2D       L2 COMMAND" \
	"$t200" || fail "header at 200: $(cat "$t200")"
grep -q "^ *$P root .* S   no   0  512M   42   100            -        - python3 -c import time, sys; time.sleep(30)$" "$t200" ||
	fail "$P at 200: $(cat "$t200")"
grep -q "^ *$Q root .* S   no   -     -    -     -            -        - python3 -c import time, sys; time.sleep(30)$" "$t200" ||
	fail "$Q at 200: $(cat "$t200")"
grep -qx "    PID USER         AGE   CPU%   RSS  PEAK CSW vol/inv  THR GPU  GMEM  SM% IDLE%          H2D       L2 COMMAND" \
	"$t120" || fail "header at 120: $(cat "$t120")"
grep -q "^ *$P root .* 1   0  512M   42   100            -        - python3 -c impor$" "$t120" ||
	fail "$P at 120: $(cat "$t120")"
grep -qx "    PID USER       CPU%   RSS GPU  GMEM  SM% IDLE%          H2D COMMAND" "$t80" ||
	fail "header at 80: $(cat "$t80")"
grep -q "^ *$P root  *[0-9.]*  *[0-9.]*[KMG]   0  512M   42   100            - python3 -c impor$" "$t80" ||
	fail "$P at 80: $(cat "$t80")"
COLUMNS=100 "$APX" status --sort gpu | sed -n 3p | grep -q "^ *$P " || fail "--sort gpu: $P not first"
COLUMNS=80 "$APX" top -n 1 --sort gpu > "$T/top" || fail "apx top -n 1"
sed -n 3p "$T/top" | grep -q "^ *$P root .*   0  512M   42   100            - python3 -c impor$" ||
	fail "apx top table: $(cat "$T/top")"
"$PY" "$(dirname "$0")/top_pty.py" "$APX" "$P" 120 "GPU0 Fake H200  util 0%  mem 1.0/80.0 GiB  power -" \
	"   0  512M   42   100            -        - python3 -c impor" || fail "apx top on a terminal"
kill "$Q"; wait "$Q" 2>/dev/null
kill "$P"; wait "$P" 2>/dev/null
WAIT_S=5 wait_for count_files "$T/state/0" "*-$P-*.apx" 1 || fail "no summary for $P"
"$APXKV" "$T"/state/0/*-"$P"-*.apx > "$T/kv" || fail "apxkv"
for want in "nvperfd.nvml=yes" "nvperfd.gpu.device=0" "nvperfd.gpu.mem_peak_bytes=536870912" \
	    "nvperfd.gpu.sm_util_pct=42.0" "nvperfd.gpm.sm_util=3.00" "nvperfd.gpm.pcie_rx_mib_s=31.50"; do
	grep -qx "kv $want" "$T/kv" || fail "expected $want; got: $(grep "nvperfd.g" "$T/kv")"
done
# every sample had the device's utilization, and it was 0: the three counts are equal
n=$(sed -n 's/^kv nvperfd.gpu.samples=//p' "$T/kv")
[ -n "$n" ] && [ "$n" -ge 3 ] && grep -qx "kv nvperfd.gpu.util_samples=$n" "$T/kv" &&
	grep -qx "kv nvperfd.gpu.idle_samples=$n" "$T/kv" ||
	fail "GPU sample counts: $(grep "nvperfd.gpu.*samples" "$T/kv")"
grep -q "^kv nvperfd.gpm=device-wide, over [0-9]* samples where the process was the only one" "$T/kv" ||
	fail "GPM attribution not said"
grep -q "^finding gpu-idle 2 GPU 0 idle in 100% of the samples" "$T/kv" ||
	fail "no gpu-idle finding: $(grep ^finding "$T/kv")"
grep -q "^finding sm-low 1 mean SM utilization 42.0% on GPU 0 (threshold 50%)$" "$T/kv" ||
	fail "no sm-low finding: $(grep ^finding "$T/kv")"
grep -q "^finding memory-capacity 2 GPU 0 memory reached 1.2% of its total while the process ran (threshold 1%)$" \
	"$T/kv" || fail "no memory-capacity finding: $(grep ^finding "$T/kv")"
# the time series: METRIC records, only values the driver gave
[ "$(grep -c "^metric gpu.mem_bytes 0 $P 536870912 bytes$" "$T/kv")" -ge 3 ] ||
	fail "GPU memory series: $(grep ^metric "$T/kv" | head)"
grep -q "^metric gpu.util_pct 0 0 0 %$" "$T/kv" || fail "device utilization series"
grep -q "^metric gpu.sm_util_pct 0 $P 42 %$" "$T/kv" || fail "SM utilization series"
grep -q "^metric gpm.sm_util_pct 0 0 3 %$" "$T/kv" || fail "GPM series"
"$APX" report --color never "$T"/state/0/*-"$P"-*.apx >/dev/null 2>&1 || fail "apx report on a GPU summary"
"$APX" info "$T"/state/0/*-"$P"-*.apx >/dev/null || fail "apx info on a GPU summary"

# NVML lists only pids of another PID namespace (nvperfd in a container): said once, and the
# summary of a process says why it has no GPU values (not "not seen on a GPU")
start_python 30
R=$LAST
wait_for tracked "$R" || fail "$R not tracked"
echo 4194301 > "$T/gpupids"	# above any pid the kernel hands out by default
WAIT_S=3 wait_for grep -q "NVML: none of the 1 processes it lists on the GPUs exists in this PID namespace" \
	"$T/log" || fail "foreign pids not said: $(grep NVML "$T/log")"
kill "$R"; wait "$R" 2>/dev/null
WAIT_S=5 wait_for count_files "$T/state/0" "*-$R-*.apx" 1 || fail "no summary for $R"
"$APXKV" "$T"/state/0/*-"$R"-*.apx > "$T/kv.r" || fail "apxkv $R"
grep -qx "kv nvperfd.nvml=n/a (NVML's process ids are of another PID namespace: nvperfd in a container?)" \
	"$T/kv.r" || fail "summary of $R: $(grep nvml "$T/kv.r")"
[ "$(grep -c "exists in this PID namespace" "$T/log")" = 1 ] || fail "foreign pids said more than once"
stop_daemon
echo "ok"
