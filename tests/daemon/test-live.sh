#!/bin/bash
# test-live.sh - live_check: a Python process with a big problem (rss-peak, severity warning,
# over a 1M threshold) gets its `notice:` line, marked "(running N s)" and ending with the
# `apx attach PID` command, in the log while it still runs (checked alive when the line is
# there), once per rule however many checks follow (live_check_every = 1s); counted in
# `apx status --stats` (live_notices); its name escaped as at exit; the exit notice still
# written; with notice = tty the line reaches its terminal; a user's live_check = 0 turns it off.
# Run by ctest (label daemon).
. "$(dirname "$0")/lib.sh"

write_conf "threshold.min_runtime = 0
threshold.rss_peak = 1M
live_check = 1s
live_check_every = 1s"
start_daemon

# the live line of PID (the rss-peak finding; a process without CUDA: --python-only)
live_re() {
	echo "notice: pid $1 uid 0 \"$2\" (running [0-9]* s): peak RSS [0-9.]* [KMG]iB" \
		"(threshold 1.0 MiB); next: apx attach $1 --python-only --duration 10\$"
}
exit_re() {	# the exit line of PID (no "running")
	echo "notice: pid $1 uid 0 \"python3\": peak RSS .*; next: apx attach $1 --python-only" \
		"--duration 10\$"
}
live_count() { grep -c "notice: pid $1 uid 0 .* (running [0-9]* s): peak RSS" "$T/log"; }

# 1. while it runs: the notice, once, with the command for its pid
start_python 30; P=$LAST
WAIT_S=2 wait_for tracked "$P" || fail "python3 pid $P not tracked"
WAIT_S=5 wait_for grep -q "$(live_re "$P" python3)" "$T/log" ||
	fail "no live notice for $P: $(grep "pid $P " "$T/log")"
kill -0 "$P" 2>/dev/null && exe_is_python "$P" || fail "pid $P not running at its live notice"
tracked "$P" || fail "pid $P no longer tracked at its live notice"
grep -q "pid $P uid 0 \"python3\" ended" "$T/log" && fail "pid $P ended before its live notice"
sleep 2.5	# two or three more live checks: the same rule is not told again
[ "$(live_count "$P")" = 1 ] || fail "live notice repeated: $(grep "pid $P " "$T/log")"
n=$("$APX" status --stats | awk '$1 == "live_notices" { print $2 }')
[ -n "$n" ] && [ "$n" -ge 1 ] || fail "live_notices not counted: $("$APX" status --stats)"
# at its exit: the notice with the final numbers, as before (no "running")
kill "$P"
WAIT_S=3 wait_for grep -q "$(exit_re "$P")" "$T/log" ||
	fail "no exit notice for $P: $(grep "pid $P " "$T/log")"
[ "$(live_count "$P")" = 1 ] || fail "a second live notice for $P"

# 2. a name chosen by the process is escaped, as in the exit lines
"$PY" -c "
import ctypes, time
ctypes.CDLL(None).prctl(15, b'ev\\nFORGED\\x1b[31m', 0, 0, 0)
time.sleep(30)" &
EV=$!; PIDS="$PIDS $EV"
ev_re='notice: pid '"$EV"' uid 0 "ev\\x0aFORGED\\x1b\[31m" (running '
WAIT_S=5 wait_for grep -q "$ev_re" "$T/log" ||
	fail "no escaped live notice for $EV: $(grep -a "pid $EV " "$T/log")"
grep -q "^FORGED" "$T/log" && fail "a process name forged a log line"
kill "$EV"

# 3. notice = tty: the live line on the terminal the process runs from (a pty of script(1))
if command -v script >/dev/null; then
	echo "notice = tty" > "$T/user-0.conf"
	sleep 0.3	# inotify: read again (or at the next process start)
	script -qec "$PY -c 'import time; time.sleep(2.5)'" "$T/tty.out" >/dev/null </dev/null
	tty_re="nvperfd: pid [0-9]* (python3, running [0-9]* s): peak RSS .*; next: apx attach"
	grep -aq "$tty_re [0-9]* --python-only --duration 10" "$T/tty.out" ||
		fail "no live notice on the terminal: $(cat -v "$T/tty.out")"
fi

# 4. a user's live_check = 0: nothing while it runs, the exit notice still
reread() { [ "$(grep -c "config of uid 0 re-read" "$T/log")" -gt "$1" ]; }
r0=$(grep -c "config of uid 0 re-read" "$T/log")
echo "live_check = 0" > "$T/user-0.conf"
WAIT_S=3 wait_for reread "$r0" || sleep 0.3	# re-read now, or at the next process start
start_python 30; Q=$LAST
WAIT_S=2 wait_for tracked "$Q" || fail "python3 pid $Q not tracked"
sleep 2.5
[ "$(live_count "$Q")" = 0 ] ||
	fail "live notice with live_check = 0: $(grep "pid $Q " "$T/log")"
kill "$Q"
WAIT_S=3 wait_for grep -q "$(exit_re "$Q")" "$T/log" ||
	fail "no exit notice for $Q"
stop_daemon
echo "ok"
