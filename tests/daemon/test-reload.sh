#!/bin/bash
# test-reload.sh - configuration: a malformed machine config stops start-up with FILE:LINE:COL
# and what was expected; a malformed edit of the running daemon's config is rejected and the
# previous config kept; a good edit applies without a restart (inotify); `apx config` validates
# and writes atomically; a user threshold crossed gives a notice in the log and a finding in
# the summary. Run by ctest (label daemon).
. "$(dirname "$0")/lib.sh"

# 1. malformed at start
write_conf "sample_period = soon"
LN=$(wc -l < "$CONF")	# the bad line is the last one
out=$("$NVPERFD" --config "$CONF" 2>&1) && fail "nvperfd started with a bad config"
echo "$out" | grep -q "nvperfd.conf:$LN:17: sample_period: expected a duration" ||
	fail "bad start message: $out"
out=$("$APX" init --config "$CONF" --nvperfd "$NVPERFD" 2>&1) && fail "apx init accepted a bad config"
echo "$out" | grep -q "nvperfd.conf:$LN:17" || fail "apx init message: $out"
write_conf "colour = blue"
out=$("$NVPERFD" --config "$CONF" 2>&1)
echo "$out" | grep -q "nvperfd.conf:$LN:1: unknown key 'colour'" || fail "unknown key message: $out"

# 2. running daemon: bad edit rejected, good edit applied
write_conf
start_daemon
cp "$CONF" "$T/good.conf"
echo "max_tracked = lots" >> "$CONF"
LN=$(wc -l < "$CONF")
WAIT_S=3 wait_for grep -q "config rejected (file changed), keeping the previous one: .*nvperfd.conf:$LN:15: max_tracked: expected a whole number" "$T/log" ||
	fail "bad edit not reported"
"$APX" status >/dev/null || fail "daemon died after a bad config"
"$APX" status --stats | grep -q "^config_errors *1" || fail "config_errors not counted"
# a good edit (atomic replace, as editors do)
sed 's/^sample_period = .*/sample_period = 0.5/' "$T/good.conf" > "$CONF.new" && mv "$CONF.new" "$CONF"
WAIT_S=3 wait_for grep -q "config loaded (file changed)" "$T/log" || fail "good edit not applied"
"$APX" status --stats | grep -q "^sample_period_ns *500000000" || fail "sample period not applied"

# 3. apx config: validation, atomic write, unset
UC=$T/user-0.conf
"$APX" config --file "$UC" set notice loud 2>"$T/err"; rc=$?
[ $rc = 2 ] || fail "apx config set with a bad value: exit $rc"
grep -q "expected one of: none, log, tty" "$T/err" || fail "apx config message: $(cat "$T/err")"
"$APX" config --file "$UC" set state_dir /x 2>"$T/err" && fail "machine key accepted in user file"
"$APX" config --file "$UC" set nosuchkey 1 2>/dev/null && fail "unknown key accepted"
[ -e "$UC" ] && fail "file written after rejected changes"
echo "# my settings" > "$UC"
"$APX" config --file "$UC" set threshold.cpu_high_pct 5 || fail "set cpu_high_pct"
"$APX" config --file "$UC" set threshold.min_runtime 0 || fail "set min_runtime"
"$APX" config --file "$UC" set metrics cpu,rss,csw || fail "set metrics"
"$APX" config --file "$UC" set metrics all || fail "set metrics again"
[ "$(grep -c '^metrics' "$UC")" = 1 ] || fail "metrics set twice: $(cat "$UC")"
grep -q "^# my settings" "$UC" || fail "comment lost"
"$APX" config --file "$UC" get threshold.cpu_high_pct | grep -qx 5 || fail "get"
"$APX" config --file "$UC" list | grep -q "^notice .*= log .*# default" || fail "list"
"$APX" config --file "$UC" set notice tty && "$APX" config --file "$UC" unset notice || fail "unset"
grep -q "^notice" "$UC" && fail "unset left the key"
ls "$T"/user-0.conf.tmp.* 2>/dev/null && fail "temporary file left"
# the interactive prompt on a terminal: completion, history, set
cp "$UC" "$T/repl.conf"
"$PY" "$(dirname "$0")/repl.py" "$APX" "$T/repl.conf" || fail "apx config prompt"
grep -qx "set notice tty" "$T/apx-config.history" || fail "prompt history not kept"

# 4. the threshold crossed: notice in the log, finding in the summary (the new user config is
# picked up through inotify for processes that start afterwards)
sleep 0.3	# inotify: the daemon re-reads it (or reads it at the next process start)
"$PY" -c "
import time
t = time.time()
while time.time() - t < 1.2: pass" &
B=$!; PIDS="$PIDS $B"
wait "$B"
WAIT_S=3 wait_for grep -q "notice: pid $B uid 0 \"python3\": average CPU" "$T/log" || fail "no notice for $B"
f=$(ls "$T"/state/0/*-"$B"-*.apx) || fail "no summary for $B"
"$APX" info "$f" | grep -q "finding *1 " || fail "no finding record in $f: $("$APX" info "$f")"
"$APX" status --json | grep -q '"rule":"cpu-high"' || fail "finding not in apx status"

# notice = tty: one line on the terminal the process ran from (a pty made by script(1))
if command -v script >/dev/null; then
	"$APX" config --file "$UC" set notice tty || fail "set notice tty"
	sleep 0.3
	script -qec "$PY -c 'import time
t = time.time()
while time.time() - t < 1.2: pass'; sleep 1" "$T/tty.out" >/dev/null </dev/null
	grep -q "nvperfd: pid [0-9]* (python3): average CPU" "$T/tty.out" ||
		fail "no notice on the terminal: $(cat "$T/tty.out")"
fi
echo "ok"
