#!/bin/bash
# test-metrics.sh - nvperfd's Prometheus endpoint (metrics_listen; lib/daemon/metrics_http.c,
# metrics_text.c), scraped by a raw-socket client (metrics.py). With the stand-in NVML of
# test-nvml.sh: 200 and the exposition content type; every line of the answer parses (families
# together, HELP and TYPE first); the daemon gauges; a tracked python3 with its pid, user and
# comm and values checked against /proc; nvperfd's own process_* metrics against /proc; the GPU
# gauges with the stand-in's readings (temperature, energy, throttle reasons, XID errors, labels
# pci_bus_id and device included) and none for what it does not give (power), the GPU's idle
# share of the process on it; label escaping; copy
# bytes, the pageable H2D rate and L2 persistence from the uprobes (stand-in libcuda, when BPF
# works here); 404/405/400/431; a silent client dropped after 2 s (408) while scrapes go on; 20
# connections at once (16 served, 4 refused); a client that reads slowly (several EPOLLOUT
# writes); 16 idle connections renewed in a loop do not lock scrapes out (the oldest silent one
# gives its slot); the 503 and every answer arrive whole, never reset; re-binding and closing on
# reload; a bind failure; a malformed address at start.
# Needs: APX, NVPERFD, FAKENVML, FAKECUDA.
. "$(dirname "$0")/lib.sh"

M="$PY $(dirname "$0")/metrics.py"
PORT=$($M port) || fail "no free port"
A=127.0.0.1:$PORT

# scrape [PATH]: the answer's sample lines in $T/m (status and type on the first two lines)
scrape() { $M scrape "$A" "${1:-/metrics}" "$T/m.raw" > "$T/m" || fail "scrape: $(cat "$T/m")"; }
has() { grep -qxF "$1" "$T/m" || fail "expected the line '$1'; got:
$(grep -F "${2:-${1%%[{ ]*}}" "$T/m" | head -n 20)"; }
value() { grep -F "$1" "$T/m" | head -n 1 | awk '{ print $NF }'; }

# 1. the stand-in NVML (one GPU, whose compute processes are the pids in $T/gpupids)
: > "$T/gpupids"
write_conf "nvml = yes
uprobe_copy_time = yes
metrics_listen = $A"
LD_LIBRARY_PATH=$(dirname "$FAKENVML") APX_FAKENVML_PIDS=$T/gpupids start_daemon
grep -q "NVML: 1 GPUs (Fake H200)" "$T/log" || fail "fake NVML not seen: $(grep NVML "$T/log")"
[ "$(grep -c "metrics: listening on $A$" "$T/log")" = 1 ] || fail "listening line: $(grep metrics: "$T/log")"
start_python 60
P=$LAST
echo "$P" > "$T/gpupids"
# a process whose name needs every escape: quote, backslash, newline, a control byte
"$PY" -c "
import ctypes, time
ctypes.CDLL(None).prctl(15, b'e\"v\\\\\\n\\x1b', 0, 0, 0)
time.sleep(60)" &
EV=$!; PIDS="$PIDS $EV"
wait_for tracked "$P" || fail "$P not tracked"
wait_for tracked "$EV" || fail "$EV not tracked"
sleep 1.5	# several samples (0.2 s); GPM pairs 110 ms apart or more

scrape
[ "$(sed -n 1p "$T/m")" = "status 200" ] || fail "status: $(head -n 2 "$T/m")"
[ "$(sed -n 2p "$T/m")" = "type text/plain; version=0.0.4; charset=utf-8" ] || fail "type: $(sed -n 2p "$T/m")"
# daemon gauges
has "nvperfd_info{version=\"$("$NVPERFD" --version | cut -d' ' -f2)\"} 1"
has "nvperfd_metrics_scrapes_total 1"
has "nvperfd_metrics_connections 1"
has "nvperfd_nvml_available 1"
has "nvperfd_metrics_truncated 0"
has "nvperfd_process_event_overruns_total 0"
up=$(value "nvperfd_uptime_seconds ")
has "nvperfd_summaries_failed_total 0"		# not nvperfd_summary_*: promtool's 'type in name'
grep -q "^nvperfd_summaries_folder_rescans_total [0-9]*$" "$T/m" || fail "no nvperfd_summaries_folder_rescans_total"
# nvperfd's own process_* metrics, as Prometheus's client libraries write them, against /proc
D=$(cat "$T/pid")
has "process_max_fds $(awk '/^Max open files/ { print $4 }' "/proc/$D/limits")"
fds=$(value "process_open_fds ")
pfds=$(ls "/proc/$D/fd" | wc -l)
[ -n "$fds" ] && [ $(( fds > pfds ? fds - pfds : pfds - fds )) -le 2 ] || fail "open fds $fds, /proc says $pfds"
vm=$(value "process_virtual_memory_bytes ")
pvm=$(( $(awk '/^VmSize:/ { print $2 }' "/proc/$D/status") * 1024 ))
[ -n "$vm" ] && [ $(( vm > pvm ? vm - pvm : pvm - vm )) -le $(( pvm / 10 )) ] || fail "vm $vm, /proc says $pvm"
rss=$(value "process_resident_memory_bytes ")
[ -n "$rss" ] && [ "$rss" = "$(value "nvperfd_resident_memory_bytes ")" ] || fail "process_resident_memory_bytes $rss"
awk -v c="$(value "process_cpu_seconds_total ")" 'BEGIN { exit !(c != "" && c >= 0 && c < 30) }' ||
	fail "process_cpu_seconds_total: $(value "process_cpu_seconds_total ")"
st=$(value "process_start_time_seconds ")
awk -v s="$st" -v now="$(date +%s)" -v up="$up" 'BEGIN { d = now - up - s; exit !(d < 3 && d > -3) }' ||
	fail "process_start_time_seconds $st, uptime $up, now $(date +%s)"
awk -v u="$up" 'BEGIN { exit !(u > 1.5 && u < 60) }' || fail "uptime $up"
# P, EV and metrics.py itself (a python3 too); others on this machine may come and go
n=$(value "nvperfd_tracked_processes ")
[ "$n" -ge 2 ] && [ "$n" -le $(( $("$APX" status --json | grep -o '"pid":' | wc -l) + 3 )) ] ||
	fail "tracked processes $n; apx status: $("$APX" status --json | grep -o '"pid":[0-9]*' | tr '\n' ' ')"
[ "$(grep -c '^nvperfd_process_start_time_seconds{' "$T/m")" = "$n" ] ||
	fail "$n tracked processes but $(grep -c '^nvperfd_process_start_time_seconds{' "$T/m") in the answer"
[ "$(value "nvperfd_process_events_total ")" -gt 0 ] || fail "no process events counted"
[ "$(value "nvperfd_samples_total ")" -gt 0 ] || fail "no samples counted"
# the GPU: the stand-in's readings, exactly; power is unsupported there, so absent
# (labels as dcgm-exporter names them: gpu, UUID, pci_bus_id, device; its modelName as
# model_name, snake_case as Prometheus wants)
G='gpu="0",UUID="GPU-00000000-fake",pci_bus_id="00000000:3B:00.0",device="nvidia2",model_name="Fake H200"'
has "nvperfd_gpu_info{$G} 1"
has "nvperfd_gpu_temperature_celsius{$G} 47"
has "nvperfd_gpu_energy_joules_total{$G} 123456.789"		# 123456789 mJ
grep -q "^# TYPE nvperfd_gpu_energy_joules_total counter$" "$T/m.raw" || fail "energy is not a counter"
# throttle reasons: one series per reason, 1 for the stand-in's SwPowerCap and SwThermalSlowdown
[ "$(grep -c "^nvperfd_gpu_clock_throttle_reason{$G,reason=" "$T/m")" = 9 ] ||
	fail "throttle reasons: $(grep throttle "$T/m")"
for r in sw_power_cap sw_thermal_slowdown; do has "nvperfd_gpu_clock_throttle_reason{$G,reason=\"$r\"} 1"; done
for r in gpu_idle applications_clocks_setting hw_slowdown sync_boost hw_thermal_slowdown \
	 hw_power_brake_slowdown display_clock_setting; do
	has "nvperfd_gpu_clock_throttle_reason{$G,reason=\"$r\"} 0"
done
# XID errors: the stand-in's events 79, 13, 13, read once each (never waited for)
has "nvperfd_gpu_xid_errors_total{$G,xid=\"79\"} 1"
has "nvperfd_gpu_xid_errors_total{$G,xid=\"13\"} 2"
has "nvperfd_gpu_last_xid{$G} 13"
[ "$(grep -c "^nvperfd_gpu_xid_errors_total{" "$T/m")" = 2 ] || fail "XIDs: $(grep xid "$T/m")"
grep -q "NVML: libnvidia-ml lacks\|XID events on" "$T/log" && fail "optional NVML said missing: $(grep NVML "$T/log")"
has "nvperfd_gpu_utilization_percent{$G} 0"
has "nvperfd_gpu_memory_utilization_percent{$G} 5"
has "nvperfd_gpu_utilization_ratio{$G} 0"
has "nvperfd_gpu_memory_utilization_ratio{$G} 0.05"
has "nvperfd_gpu_memory_used_bytes{$G} 1073741824"
has "nvperfd_gpu_memory_total_bytes{$G} 85899345920"
has "nvperfd_gpu_sm_clock_hertz{$G} 1980000000"
has "nvperfd_gpu_memory_clock_hertz{$G} 2619000000"
has "nvperfd_gpu_pcie_tx_bytes_per_second{$G} 31457280"	# GPM 30 MiB/s
has "nvperfd_gpu_pcie_rx_bytes_per_second{$G} 33030144"	# GPM 31.5 MiB/s
has "nvperfd_gpu_gpm_graphics_util_percent{$G} 1.5"		# the stand-in: 1.5 x metric id
has "nvperfd_gpu_gpm_sm_util_percent{$G} 3"
has "nvperfd_gpu_gpm_sm_occupancy_percent{$G} 4.5"
has "nvperfd_gpu_gpm_tensor_util_percent{$G} 7.5"
has "nvperfd_gpu_gpm_dram_bw_util_percent{$G} 15"
has "nvperfd_gpu_gpm_fp64_util_percent{$G} 16.5"
has "nvperfd_gpu_gpm_fp32_util_percent{$G} 18"
has "nvperfd_gpu_gpm_fp16_util_percent{$G} 19.5"
has "nvperfd_gpu_gpm_sm_util_ratio{$G} 0.03"
has "nvperfd_gpu_gpm_dram_bw_util_ratio{$G} 0.15"
has "nvperfd_gpu_gpm_fp16_util_ratio{$G} 0.195"
has "nvperfd_gpu_nvlink_rx_bytes_per_second{$G} 94371840"	# 90 MiB/s
has "nvperfd_gpu_nvlink_tx_bytes_per_second{$G} 95944704"	# 91.5 MiB/s
grep -q "^nvperfd_gpu_power" "$T/m" && fail "power exported, though the stand-in does not give it: $(grep power "$T/m")"
# the python3 process: labels, and values against /proc
L="pid=\"$P\",user=\"root\",comm=\"python3\""
has "nvperfd_process_gpu_memory_bytes{$L} 536870912"
has "nvperfd_process_gpu_memory_peak_bytes{$L} 536870912"
has "nvperfd_process_gpu_sm_util_percent{$L} 42"
has "nvperfd_process_gpu_sm_util_mean_percent{$L} 42"
has "nvperfd_process_gpu_idle_percent{$L} 100"	# the stand-in's GPU is always idle
has "nvperfd_process_gpu_sm_util_ratio{$L} 0.42"
has "nvperfd_process_gpu_sm_util_mean_ratio{$L} 0.42"
has "nvperfd_process_gpu_idle_ratio{$L} 1"
grep -q "^nvperfd_process_\(l2_\|h2d_\).*pid=\"$P\"" "$T/m" &&
	fail "L2 or copy rate for a process without uprobes: $(grep "pid=\"$P\"" "$T/m")"
has "nvperfd_process_threads{$L} 1"
has "nvperfd_process_cuda{$L} 0"
rss=$(value "nvperfd_process_resident_memory_bytes{$L}")
prss=$(( $(awk '/^VmRSS:/ { print $2 }' "/proc/$P/status") * 1024 ))
[ -n "$rss" ] && [ $(( rss > prss ? rss - prss : prss - rss )) -le $(( prss / 10 )) ] ||
	fail "rss $rss, /proc says $prss"
cpu=$(value "nvperfd_process_cpu_percent{$L}")
awk -v c="$cpu" 'BEGIN { exit !(c != "" && c >= 0 && c < 50) }' || fail "cpu % of a sleeping process: $cpu"
cr=$(value "nvperfd_process_cpu_ratio{$L}")
awk -v c="$cpu" -v r="$cr" 'BEGIN { d = c / 100 - r; exit !(r != "" && d < 1e-9 && d > -1e-9) }' ||
	fail "cpu ratio $cr beside cpu percent $cpu"
# Prometheus conventions over the whole answer: every counter ends in _total, every _percent
# gauge has its _ratio twin with as many series, no family in a non-base unit
awk '/^# TYPE / && $4 == "counter" && $3 !~ /_total$/ { print "counter " $3; bad = 1 }
     END { exit bad }' "$T/m.raw" || fail "counters without _total"
for f in $(awk '/^# TYPE .*_percent gauge$/ { print $3 }' "$T/m.raw"); do
	a=$(grep -c "^$f{" "$T/m.raw"); b=$(grep -c "^${f%_percent}_ratio{" "$T/m.raw")
	[ "$a" = "$b" ] || fail "$f: $a series, ${f%_percent}_ratio: $b"
done
grep -E '^# TYPE nvperfd_[a-z0-9_]*_(milli[a-z]*|micro[a-z]*|kilo[a-z]*|mega[a-z]*|mib|kib|ms|us|ns|mhz|mw|kbps)( |_)' "$T/m.raw" &&
	fail "a family in a non-base unit"
start=$(value "nvperfd_process_start_time_seconds{$L}")
pstart=$("$PY" -c "
import os
btime = int([l for l in open('/proc/stat') if l.startswith('btime')][0].split()[1])
ticks = int(open('/proc/$P/stat').read().rsplit(')', 1)[1].split()[19])
print(btime + ticks / os.sysconf('SC_CLK_TCK'))")
awk -v a="$start" -v b="$pstart" 'BEGIN { d = a - b; exit !(d < 2 && d > -2) }' ||
	fail "start time $start, /proc says $pstart"
ECOMM='e\"v\\\n\\x1b'	# e " v \ newline ESC, as label text
has "nvperfd_process_threads{pid=\"$EV\",user=\"root\",comm=\"$ECOMM\"} 1" "pid=\"$EV\""
grep -q "pid=\"$EV\".*nvperfd_gpu\|nvperfd_process_gpu.*pid=\"$EV\"" "$T/m" &&
	fail "GPU values for a process NVML does not list"
has "nvperfd_metrics_truncated 0"

# 2. other requests
scrape /other
[ "$(head -n 1 "$T/m")" = "status 404" ] || fail "/other: $(cat "$T/m")"
$M raw "$A" 'POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n' | head -n 1 | grep -qx "status 405 GET, HEAD" ||
	fail "POST: $($M raw "$A" 'POST /metrics HTTP/1.0\r\n\r\n')"
$M raw "$A" 'hello\r\n\r\n' | head -n 1 | grep -qx "status 400 " || fail "garbage: not 400"
$M raw "$A" 'GET /metrics\r\n\r\n' | head -n 1 | grep -qx "status 400 " || fail "no version: not 400"
$M raw "$A" "GET /metrics HTTP/1.0\r\nX: $(head -c 5000 /dev/zero | tr '\0' a)\r\n\r\n" | head -n 1 |
	grep -qx "status 431 " || fail "5000-byte request: not 431"
$M raw "$A" 'HEAD /metrics HTTP/1.0\r\n\r\n' > "$T/head" && [ "$(cat "$T/head")" = "status 200 " ] ||
	fail "HEAD: $(cat "$T/head")"
scrape "/metrics?name[]=x"
[ "$(head -n 1 "$T/m")" = "status 200" ] || fail "query string: $(head -n 1 "$T/m")"
has "nvperfd_metrics_bad_requests_total 5"

# 3. a client that sends nothing is dropped after 2 s (408, then EOF, no reset); a scrape
# meanwhile is served at once
$M idle "$A" > "$T/idle" || fail "idle client: $(cat "$T/idle")"
cat "$T/idle"
awk '/^scrape beside it took/ { exit !($5 < 1) }' "$T/idle" || fail "scrape blocked by the idle client"
awk '/^dropped after/ { exit !($3 >= 1.8 && $3 < 4) }' "$T/idle" || fail "idle client: $(cat "$T/idle")"
grep -qx "said HTTP/1.0 408 Request Timeout" "$T/idle" || fail "no 408: $(cat "$T/idle")"

# 4. 20 connections at once: 16 served, 4 refused with a whole 503 (read after their request
# was sent: no reset), the daemon fine afterwards
$M concurrent "$A" 20 > "$T/conc" || fail "20 connections: $(cat "$T/conc")"
grep -qx "ok 16 refused 4" "$T/conc" || fail "20 connections: $(cat "$T/conc")"
scrape
has "nvperfd_metrics_refused_total 4"
has "nvperfd_metrics_timeouts_total 1"
has "nvperfd_metrics_evicted_total 0"
has "nvperfd_metrics_connections 1"

# 4b. 16 silent connections, each renewed as soon as it is closed, for 4 s (past the 2 s
# request limit): scrapes every 0.2 s meanwhile are all served, the silent ones evicted
$M lockout "$A" 16 4 > "$T/lock" || fail "lockout: $(cat "$T/lock")"
cat "$T/lock"
grep -q "^scrapes ok [1-9][0-9]* failed 0$" "$T/lock" || fail "scrapes locked out: $(cat "$T/lock")"
scrape
ev=$(value "nvperfd_metrics_evicted_total ")
[ "$ev" -ge 1 ] || fail "no silent connection evicted ($(cat "$T/lock"))"

# 4c. 500 scrapes at once (before the fix: 23 got no answer at all): every one gets an answer, the
# metrics or a whole 503, none a silent close or a reset; the daemon fine afterwards
$M burst "$A" 500 > "$T/burst" || fail "burst: $(cat "$T/burst")"
cat "$T/burst"
grep -q "^ok [0-9]* refused [0-9]* none 0 reset 0$" "$T/burst" || fail "500 scrapes: $(cat "$T/burst")"
[ "$(awk '{ print $2 + $4 }' "$T/burst")" = 500 ] || fail "500 scrapes: $(cat "$T/burst")"
scrape
[ "$(head -n 1 "$T/m")" = "status 200" ] || fail "scrape after the burst"

# 5. copy bytes from the uprobes: the stand-in libcuda's known copies (test-uprobes.sh)
if grep -q "eBPF uprobes ready" "$T/log"; then
	rm -f "$T/go"; mkfifo "$T/go"
	"$PY" "$(dirname "$0")/fakecuda.py" "$FAKECUDA" "$T/go" calls > "$T/fake.out" 2>&1 &
	F=$!; PIDS="$PIDS $F"
	WAIT_S=8 wait_for grep -q "pid $F: uprobes attached" "$T/log" || fail "probes not attached to $F"
	echo go > "$T/go"
	sleep 1	# the calls, and the ring buffer drained
	scrape
	L="pid=\"$F\",user=\"root\",comm=\"python3\""
	has "nvperfd_process_copy_bytes_total{$L,direction=\"h2d\",memory=\"pageable\"} 20557"
	has "nvperfd_process_copy_bytes_total{$L,direction=\"h2d\",memory=\"pinned\"} 4024"
	has "nvperfd_process_copy_bytes_total{$L,direction=\"d2h\",memory=\"pageable\"} 16384"
	has "nvperfd_process_copy_bytes_total{$L,direction=\"d2h\",memory=\"pinned\"} 400"
	has "nvperfd_process_copy_calls_total{$L,direction=\"h2d\",memory=\"pinned\"} 5"
	has "nvperfd_process_copy_calls_total{$L,direction=\"h2d\",memory=\"pageable\"} 6"
	has "nvperfd_process_copy_calls_total{$L,direction=\"d2h\",memory=\"pageable\"} 2"
	has "nvperfd_process_copy_calls_total{$L,direction=\"d2h\",memory=\"pinned\"} 4"
	has "nvperfd_uprobes_available 1"
	# L2 persistence: the 3 MiB limit and the one window; the pageable H2D rate: its 20557
	# bytes over the call time apx status gives (written as the endpoint writes a double)
	has "nvperfd_process_l2_persisting_limit_bytes{$L} 3145728"
	has "nvperfd_process_l2_access_policy_windows_total{$L} 1"
	ns=$("$APX" status --json | grep -o "\"pid\":$F,[^}]*}" |
	     sed -n 's/.*"h2d_pageable_call_ns":\([0-9]*\),.*/\1/p')
	[ -n "$ns" ] && [ "$ns" -gt 0 ] || fail "no pageable H2D call time for $F"
	rate=$("$PY" -c "
v = 20557 * 1e9 / $ns
print(int(v) if v == int(v) else '%.15g' % v)")
	has "nvperfd_process_h2d_pageable_bytes_per_second{$L} $rate"
	grep -q "^nvperfd_process_gpu_idle_percent{$L}" "$T/m" &&
		fail "an idle share for a process NVML does not list"
	grep -q "copy_bytes_total{pid=\"$P\"" "$T/m" && fail "copy bytes for a process without probes"
	echo go > "$T/go"
	wait "$F" || fail "fakecuda.py: $(cat "$T/fake.out")"
else
	echo "note: eBPF uprobes not available here: copy bytes not checked"
fi

# 6. an answer larger than the socket buffers (300 tracked processes), read slowly: written
# over several EPOLLOUT events, and whole
"$PY" -c "
import ctypes, os, time
for i in range(300):
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(1, 9)	# PR_SET_PDEATHSIG: die with the parent
        time.sleep(60)
        os._exit(0)
print('forked', flush=True)
time.sleep(60)" > "$T/forked" &
K=$!; PIDS="$PIDS $K"
WAIT_S=10 wait_for grep -q forked "$T/forked" || fail "fork"
many() { [ "$("$APX" status --json | grep -o '"pid":' | wc -l)" -ge 300 ]; }
WAIT_S=10 wait_for many || fail "the 300 children are not tracked"
$M slow "$A" > "$T/slow" || fail "slow client: $(cat "$T/slow")"
cat "$T/slow"
scrape
slow=$(value "nvperfd_metrics_slow_writes_total ")
[ "$slow" -ge 1 ] || fail "the slow client's answer went out in one write ($(cat "$T/slow"))"
[ "$(grep -c '^nvperfd_process_threads{' "$T/m")" -ge 300 ] || fail "not every process in the answer"
kill "$K"; wait "$K" 2>/dev/null

# 7. reload: another port (the old one closes), off, on again; SIGHUP with no change is quiet
PORT2=$($M port)
sed -i "s/^metrics_listen = .*/metrics_listen = 127.0.0.1:$PORT2/" "$CONF"
WAIT_S=3 wait_for grep -q "metrics: listening on 127.0.0.1:$PORT2$" "$T/log" || fail "no re-bind: $(grep metrics: "$T/log")"
grep -q "metrics: no longer listening on $A$" "$T/log" || fail "old listener not said closed"
$M refused "$A" || fail "the old address still listens"
A=127.0.0.1:$PORT2
scrape
has "nvperfd_metrics_truncated 0"
sed -i "s/^metrics_listen = .*/metrics_listen = \"\"/" "$CONF"
WAIT_S=3 wait_for grep -q "metrics: no longer listening on $A$" "$T/log" || fail "not closed by an empty value"
$M refused "$A" || fail "still listening after metrics_listen = \"\""
sed -i "s/^metrics_listen = .*/metrics_listen = $A/" "$CONF"
WAIT_S=3 wait_for eval '[ "$(grep -c "metrics: listening on $A$" "$T/log")" = 2 ]' || fail "not re-opened"
scrape
kill -HUP "$(cat "$T/pid")"
WAIT_S=3 wait_for eval '[ "$(grep -c "config loaded (SIGHUP)" "$T/log")" = 1 ]' || fail "SIGHUP not seen"
[ "$(grep -c "metrics: listening on" "$T/log")" = 3 ] || fail "SIGHUP without a change re-bound"
scrape
# IPv6 loopback, when this machine has it
if "$PY" -c "import socket; socket.socket(socket.AF_INET6).bind(('::1', 0))" 2>/dev/null; then
	PORT6=$($M port)
	sed -i "s/^metrics_listen = .*/metrics_listen = [::1]:$PORT6/" "$CONF"
	WAIT_S=3 wait_for grep -q "metrics: listening on \[::1\]:$PORT6$" "$T/log" || fail "no IPv6 listener"
	A="[::1]:$PORT6"
	scrape
	has "nvperfd_metrics_truncated 0"
else
	echo "note: no IPv6 loopback here: [::1] not checked"
fi

# 8. a port in use: said, the daemon runs on, and a SIGHUP tries again once it is free
PORT3=$($M port)
"$PY" -c "
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $PORT3)); s.listen(); print('bound', flush=True); time.sleep(60)" > "$T/busy" &
B=$!; PIDS="$PIDS $B"
WAIT_S=5 wait_for grep -q bound "$T/busy" || fail "cannot occupy port $PORT3"
stop_daemon
sed -i "s/^metrics_listen = .*/metrics_listen = 127.0.0.1:$PORT3/" "$CONF"
: > "$T/log"
start_daemon
grep -q "metrics: cannot listen on 127.0.0.1:$PORT3: Address already in use; running without the Prometheus endpoint" "$T/log" ||
	fail "bind failure not said: $(grep metrics: "$T/log")"
"$APX" status >/dev/null || fail "daemon not running after a bind failure"
kill "$B"; wait "$B" 2>/dev/null
kill -HUP "$(cat "$T/pid")"
WAIT_S=3 wait_for grep -q "metrics: listening on 127.0.0.1:$PORT3$" "$T/log" || fail "SIGHUP did not retry"
A=127.0.0.1:$PORT3
scrape
has "nvperfd_metrics_scrapes_total 1"
stop_daemon

# 9. a malformed address stops start-up with FILE:LINE:COLUMN
write_conf "metrics_listen = localhost:9470"
LN=$(wc -l < "$CONF")
out=$("$NVPERFD" --config "$CONF" 2>&1) && fail "nvperfd started with metrics_listen = localhost:9470"
echo "$out" | grep -q "nvperfd.conf:$LN:18: metrics_listen: expected a numeric TCP address" ||
	fail "bad start message: $out"
echo "ok"
