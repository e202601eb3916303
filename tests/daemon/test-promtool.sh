#!/bin/bash
# test-promtool.sh - nvperfd's Prometheus answer against Prometheus's own lint: the exposition
# (lib/daemon/metrics_text.c) of a daemon with the stand-in NVML (every GPU family: readings,
# temperature, energy, throttle reasons, XID errors, GPM), a tracked python3 on its GPU and,
# when the eBPF uprobes work here, one with copy bytes and L2 settings (stand-in libcuda), piped
# into `promtool check metrics`, which must print nothing and exit 0 (metric and label names in
# snake_case, counters ending in _total and only counters, base units, no type name such as
# "summary" in a name). First promtool itself is shown a name it must flag, so that a promtool
# that checks nothing cannot pass the test. Skipped (77) without promtool (Debian: apt-get
# install prometheus; not in scripts/debian-packages*.txt: the package is the whole server).
# Needs: APX, NVPERFD, FAKENVML, FAKECUDA.
if ! command -v promtool >/dev/null; then
	echo "SKIP: promtool is not installed (apt-get install prometheus provides /usr/bin/promtool)"
	exit 77
fi
. "$(dirname "$0")/lib.sh"

M="$PY $(dirname "$0")/metrics.py"
PORT=$($M port) || fail "no free port"
A=127.0.0.1:$PORT

# promtool flags what it must: a type name in a metric name, camelCase labels, a counter
# without _total
printf '# HELP x_summary_errors_total e\n# TYPE x_summary_errors_total counter\nx_summary_errors_total{modelName="a"} 1\n# HELP y_calls c\n# TYPE y_calls counter\ny_calls 1\n' |
	promtool check metrics > "$T/self" 2>&1 && fail "promtool passed a bad exposition: $(cat "$T/self")"
for want in "should not include type 'summary'" "snake_case" "_total"; do
	grep -qF "$want" "$T/self" || fail "promtool did not say \"$want\": $(cat "$T/self")"
done

: > "$T/gpupids"
write_conf "nvml = yes
uprobe_copy_time = yes
metrics_listen = $A"
LD_LIBRARY_PATH=$(dirname "$FAKENVML") APX_FAKENVML_PIDS=$T/gpupids start_daemon
grep -q "NVML: 1 GPUs (Fake H200)" "$T/log" || fail "fake NVML not seen: $(grep NVML "$T/log")"
start_python 60
P=$LAST
echo "$P" > "$T/gpupids"
wait_for tracked "$P" || fail "$P not tracked"
F=""
if grep -q "eBPF uprobes ready" "$T/log"; then
	mkfifo "$T/go"
	"$PY" "$(dirname "$0")/fakecuda.py" "$FAKECUDA" "$T/go" calls > "$T/fake.out" 2>&1 &
	F=$!; PIDS="$PIDS $F"
	WAIT_S=8 wait_for grep -q "pid $F: uprobes attached" "$T/log" || fail "probes not attached to $F"
	echo go > "$T/go"
else
	echo "note: eBPF uprobes not available here: the copy and L2 families not checked"
fi
sleep 1.5	# several samples (0.2 s); GPM pairs 110 ms apart or more

$M scrape "$A" /metrics "$T/raw" > "$T/m" || fail "scrape: $(cat "$T/m")"
[ "$(sed -n 1p "$T/m")" = "status 200" ] || fail "status: $(head -n 2 "$T/m")"
# the families this test is about are in the answer (else promtool checked less than it should)
for f in nvperfd_gpu_info nvperfd_gpu_temperature_celsius nvperfd_gpu_energy_joules_total \
	 nvperfd_gpu_clock_throttle_reason nvperfd_gpu_xid_errors_total nvperfd_gpu_last_xid \
	 nvperfd_gpu_gpm_sm_util_ratio nvperfd_process_gpu_memory_bytes nvperfd_summaries_failed_total \
	 process_cpu_seconds_total process_open_fds process_start_time_seconds; do
	grep -q "^# TYPE $f " "$T/raw" || fail "no family $f in the answer"
done
if [ -n "$F" ]; then
	grep -q "^# TYPE nvperfd_process_copy_bytes_total counter" "$T/raw" || fail "no copy bytes"
	grep -q "^# TYPE nvperfd_process_l2_access_policy_windows_total counter" "$T/raw" ||
		fail "no L2 windows"
fi
promtool check metrics < "$T/raw" > "$T/lint" 2>&1
rc=$?
echo "promtool check metrics: exit $rc, $(grep -c . "$T/lint") problems, on $(grep -c '^# TYPE ' "$T/raw") families"
[ "$rc" = 0 ] && [ ! -s "$T/lint" ] || fail "promtool check metrics (exit $rc):
$(cat "$T/lint")"
if [ -n "$F" ]; then
	echo go > "$T/go"
	wait "$F" || fail "fakecuda.py: $(cat "$T/fake.out")"
fi
stop_daemon
echo "ok"
