#!/bin/bash
# bench/daemon/run.sh - nvperfd overhead, measured on the daemon's own CPU time (on-CPU ns from
# /proc/PID/schedstat) in one run:
#   1. idle: no Python process, WINDOW seconds;
#   2. tracking N busy Python processes (default 50) at the default 1 s period, WINDOW seconds;
#      then N processes of 8 threads each (per-thread /proc reads), WINDOW seconds;
#   3. an exec storm (apx-execstorm, thousands of /bin/true per second) for STORM seconds while
#      long-lived Python processes start: daemon CPU, RSS before/after, overruns, missed ones.
# Usage (root): bench/daemon/run.sh [BUILD_DIR]   (BUILD_DIR default build/rel: configure it
# with -DCMAKE_BUILD_TYPE=Release, no sanitizers). Prints one line per figure.
set -u
B=${1:-build/rel}
APX=$B/apx NVPERFD=$B/nvperfd EXECSTORM=$B/apx-execstorm
N=${N:-50} WINDOW=${WINDOW:-20} STORM=${STORM:-10}
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
for f in "$APX" "$NVPERFD" "$EXECSTORM"; do [ -x "$f" ] || { echo "missing $f"; exit 1; }; done
PY=/usr/bin/python3; [ -x $PY ] || PY=$(command -v python3)

T=$(mktemp -d /tmp/apxbench.XXXXXX); chmod 755 "$T"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; kill $(cat $T/pid 2>/dev/null) 2>/dev/null; rm -rf $T' EXIT
cat > "$T/conf" <<EOC
state_dir = $T/state
log_file = $T/log
socket = $T/sock
pid_file = $T/pid
syslog = no
EOC
export NVPERFD_SOCKET=$T/sock
"$APX" init --config "$T/conf" --nvperfd "$NVPERFD" >/dev/null || exit 1
D=$(cat "$T/pid")
HZ=$(getconf CLK_TCK)
# CPU time in ns from the scheduler (schedstat: precise, unlike tick-sampled utime/stime)
cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
tracked() { "$APX" status --stats | awk '$1 == "tracked" { print $2 }'; }
stat_of() { "$APX" status --stats | awk -v k="$1" '$1 == k { print $2 }'; }
measure() {	# measure LABEL SECONDS
	local c0 c1 t0 t1 s0 s1 e0 e1
	c0=$(cpu_ns "$D"); t0=$(date +%s.%N); s0=$(stat_of samples); e0=$(stat_of execs)
	sleep "$2"
	c1=$(cpu_ns "$D"); t1=$(date +%s.%N); s1=$(stat_of samples); e1=$(stat_of execs)
	awk -v l="$1" -v c=$((c1 - c0)) -v t0="$t0" -v t1="$t1" -v n=$((s1 - s0)) -v e=$((e1 - e0)) 'BEGIN {
		s = c / 1e9; w = t1 - t0
		printf "%-44s %7.3f s CPU in %5.1f s = %6.3f %% of one core (%d process samples, %d execs elsewhere on the machine)\n",
		       l, s, w, 100 * s / w, n, e }'
}

echo "nvperfd $("$NVPERFD" --version | cut -d' ' -f2), $(nproc) CPUs, $(uname -r), HZ=$HZ"
measure "idle (0 tracked)" "$WINDOW"

for i in $(seq "$N"); do
	"$PY" -c "while True: pass" & PIDS="$PIDS $!"
done
for _ in $(seq 100); do [ "$(tracked)" -ge "$N" ] && break; sleep 0.1; done
echo "tracked: $(tracked) of $N busy python3 processes"
sleep 2
measure "tracking $N busy python3, period 1 s" "$WINDOW"
for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; PIDS=""
sleep 1

# the same with 8 threads each (torch-like: per-thread /proc reads)
for i in $(seq "$N"); do
	"$PY" -c "
import threading, time
def idle():
    while True: time.sleep(0.5)
for _ in range(7): threading.Thread(target=idle, daemon=True).start()
while True: pass" 2>/dev/null & PIDS="$PIDS $!"
done
for _ in $(seq 100); do [ "$(tracked)" -ge "$N" ] && break; sleep 0.1; done
sleep 2
measure "tracking $N python3 x 8 threads, period 1 s" "$WINDOW"
for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; PIDS=""
sleep 1

rss0=$(rss_kib "$D"); execs0=$(stat_of execs); c0=$(cpu_ns "$D"); t0=$(date +%s.%N)
"$EXECSTORM" "$STORM" 8 > "$T/storm" & S=$!
LONG=""
for i in $(seq 5); do
	sleep $(awk -v s="$STORM" 'BEGIN { print s / 6 }')
	"$PY" -c "import time; time.sleep(120)" & LONG="$LONG $!"; PIDS="$PIDS $!"
done
wait $S
c1=$(cpu_ns "$D"); t1=$(date +%s.%N)
sleep 0.5
missed=0
for p in $LONG; do "$APX" status --json | grep -q "\"pid\":$p," || missed=$((missed + 1)); done
cat "$T/storm"
awk -v c=$((c1 - c0)) -v t0="$t0" -v t1="$t1" -v e=$(( $(stat_of execs) - execs0 )) 'BEGIN {
	s = c / 1e9; w = t1 - t0
	printf "%-44s %7.3f s CPU in %5.1f s = %6.3f %% of one core (%.1f us per exec)\n",
	       "exec storm", s, w, 100 * s / w, 1e6 * s / e }'
echo "exec storm: $(( $(stat_of execs) - execs0 )) exec events, overruns (ENOBUFS) $(stat_of enobufs), rescans $(stat_of rescans), long-lived python missed: $missed of 5"
echo "daemon RSS: $rss0 KiB before the storm, $(rss_kib "$D") KiB after"
