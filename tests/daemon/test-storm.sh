#!/bin/bash
# test-storm.sh - an exec storm (thousands of short processes per second for a few seconds)
# while Python processes start: nvperfd keeps answering, misses none of the long-lived Python
# processes (overruns are survived by a /proc rescan), and its memory stays bounded. Bounded
# in time (~10 s). Run by ctest (label daemon).
. "$(dirname "$0")/lib.sh"

SECS=${STORM_SECS:-5}
# a small event buffer, so that the storm overruns it: the rescan path must keep up
write_conf "netlink_buffer = 4K"
start_daemon
start_python 60; A=$LAST
start_python 60; B=$LAST
"$EXECSTORM" "$SECS" 8 > "$T/storm.out" &
S=$!; PIDS="$PIDS $S"
sleep 1
start_python 60; C=$LAST		# started during the storm
sleep 1
start_python 60; D=$LAST
"$APX" status --json >/dev/null || fail "no answer during the storm"
wait "$S"
cat "$T/storm.out"
for p in $A $B $C $D; do
	WAIT_S=2 wait_for tracked "$p" || fail "python $p missed during the storm"
done
"$APX" status --stats > "$T/stats"
grep -E "^(execs|enobufs|rescans|batch_periods|tracked|rss_bytes|cpu_user_us|cpu_sys_us) " "$T/stats"
rss=$(awk '$1 == "rss_bytes" { print $2 }' "$T/stats")
[ "$rss" -lt $((96 << 20)) ] || fail "daemon RSS $rss bytes after the storm"
execs=$(awk '$1 == "execs" { print $2 }' "$T/stats")
enobufs=$(awk '$1 == "enobufs" { print $2 }' "$T/stats")
[ "$execs" -gt $((SECS * 500)) ] || [ "$enobufs" -gt 0 ] || fail "storm too small: $execs execs"
[ "$enobufs" -gt 0 ] && { grep -q "process events lost (overrun #1): rescanning /proc" "$T/log" ||
	fail "overrun not logged"; }
# a tracked process whose exit event was lost is still ended (at the next sample)
kill "$A"; wait "$A" 2>/dev/null
WAIT_S=3 wait_for count_files "$T/state/0" "*-$A-*" 1 || fail "no summary for $A"
echo "ok"
