#!/bin/bash
# test-hardening.sh - nvperfd when its files change under it or clients misbehave:
# --config naming a missing file is an error; the machine config deleted or moved away while it
# runs keeps the configuration in force (not the defaults), says so in the current log, and is
# read again when it comes back; a user config planted as a symlink or a FIFO is refused and
# logged at once (IN_CREATE), without blocking; max_tracked_per_user keeps one user from taking
# every slot; the control socket's "request too long" and "too many clients" answers arrive
# whole, then EOF, never a reset, for 500 clients at once too; apx status shows UTF-8 as it is;
# a summary write lists the user's folder only the first time and when someone else changed
# it, and a folder stuffed with 70,000 files is listed without stalling the loop and pruned
# whole. Run by ctest (label daemon). Needs APX, NVPERFD.
. "$(dirname "$0")/lib.sh"
RAW="$PY $(dirname "$0")/ctlraw.py"
stat_of() { "$APX" status --stats | awk -v k="$1" '$1 == k { print $2 }'; }

# 1. an explicitly named config that does not exist: exit 1, the file named, nothing started
# (in the foreground, bounded: a daemon that starts anyway must fail the test, not hang it)
out=$(timeout 10 "$NVPERFD" --foreground --config "$T/nonexistent.conf" 2>&1); rc=$?
[ $rc = 1 ] || fail "nvperfd --config missing: exit $rc ($out)"
echo "$out" | grep -q "$T/nonexistent.conf: cannot open: No such file or directory (named with --config" ||
	fail "nvperfd --config missing: $out"
out=$("$APX" init --config "$T/nonexistent.conf" --nvperfd "$NVPERFD" 2>&1) && fail "apx init started"
echo "$out" | grep -q "nonexistent.conf: cannot open" || fail "apx init --config missing: $out"
[ -e "$T/pid" ] && fail "a pid file was written"

# 2. the machine config deleted, then moved away, while the daemon runs
write_conf "max_clients = 8"
start_daemon
[ "$(stat_of sample_period_ns)" = 200000000 ] || fail "sample period not from the file"
rm "$CONF"
WAIT_S=3 wait_for grep -q "error: config '$CONF' is gone (file changed: deleted or moved away): keeping the configuration loaded last, not the built-in defaults" "$T/log" ||
	fail "deletion not said in the current log"
sleep 0.3
[ "$(stat_of sample_period_ns)" = 200000000 ] || fail "reverted to the default sample period"
[ "$(stat_of config_errors)" = 1 ] || fail "config_errors $(stat_of config_errors)"
start_python 0.3; P=$LAST; wait "$P"
WAIT_S=3 wait_for count_files "$T/state/0" "*-$P-*" 1 || fail "summary not in the state_dir in force"
# back (an editor's atomic replace): read again
write_conf "max_clients = 8
sample_period = 0.3"
WAIT_S=3 wait_for eval '[ "$(stat_of sample_period_ns)" = 300000000 ]' || fail "file not read when back"
grep -q "config loaded (file changed)" "$T/log" || fail "reload not logged"
mv "$CONF" "$T/moved.conf"
WAIT_S=3 wait_for eval '[ "$(grep -c "is gone" "$T/log")" = 2 ]' || fail "move not said"
kill -HUP "$(cat "$T/pid")"
WAIT_S=3 wait_for grep -q "config '$CONF' still absent (SIGHUP): keeping the configuration loaded last" "$T/log" ||
	fail "SIGHUP while gone: $(tail -n 2 "$T/log")"
[ "$(stat_of sample_period_ns)" = 300000000 ] || fail "move reverted the config"
mv "$T/moved.conf" "$CONF"
WAIT_S=3 wait_for eval '[ "$(grep -c "config loaded (file changed)" "$T/log")" = 2 ]' ||
	fail "moved-back file not read"

# 3. a user config planted as a symlink, then as a FIFO: refused and logged at once, no hang
UC=$T/user-0.conf
start_python 0.2; P=$LAST; wait "$P"	# uid 0's config looked up: its folder is watched
echo "notice = tty" > "$T/target.conf"
ln -s "$T/target.conf" "$UC"
WAIT_S=3 wait_for grep -q "config of uid 0 rejected, keeping the .*: $UC: refused: a symbolic link" "$T/log" ||
	fail "symlinked user config not logged: $(grep 'uid 0' "$T/log")"
# (rejections are logged at most every 10 s per user: a fresh daemon for the FIFO)
rm "$UC"
stop_daemon
start_daemon
start_python 0.2; P=$LAST; wait "$P"
mkfifo "$UC"
WAIT_S=3 wait_for grep -q "$UC: refused: expected a regular file (it is a FIFO)" "$T/log" ||
	fail "FIFO user config not logged (rate limit: the next line must say it): $(grep 'uid 0' "$T/log")"
timeout 5 "$APX" status >/dev/null || fail "daemon blocked on the FIFO"
rm -f "$UC"

# 4. control socket: too long a request, and a refused client, each answered whole, then EOF
$RAW "$T/sock" "$(head -c 1000 /dev/zero | tr '\0' a)\n" > "$T/raw" || fail "ctlraw"
[ "$(cat "$T/raw")" = "'err\\trequest longer than 256 bytes\\nend\\n'
eof" ] || fail "too long a request: $(cat "$T/raw")"
mkfifo "$T/hold"
$RAW "$T/sock" hold 8 < "$T/hold" > "$T/held" &
H=$!; PIDS="$PIDS $H"
exec 9> "$T/hold"
WAIT_S=3 wait_for grep -q held "$T/held" || fail "cannot hold 8 clients"
sleep 0.2
$RAW "$T/sock" "apx1 status\n$(head -c 3000 /dev/zero | tr '\0' b)" > "$T/raw" || fail "ctlraw refused"
[ "$(cat "$T/raw")" = "'err\\ttoo many clients; try again\\nend\\n'
eof" ] || fail "refused client: $(cat "$T/raw")"
exec 9>&-
wait "$H"
"$APX" status >/dev/null || fail "status after the refusal"
# 500 clients at once (before the fix: 4 resets in 1 of 4 runs): each gets its answer or the whole
# refusal, then EOF; never a reset, never nothing (max_clients = 8: most are refused)
for run in 1 2; do
	$RAW "$T/sock" burst 500 > "$T/burst" || fail "ctlraw burst"
	grep -q "^ok [0-9]* refused [0-9]* reset 0 empty 0$" "$T/burst" || fail "500 clients: $(cat "$T/burst")"
	[ "$(awk '{ print $2 + $4 }' "$T/burst")" = 500 ] || fail "500 clients: $(cat "$T/burst")"
done
"$APX" status >/dev/null || fail "status after 500 clients"

# 4b. apx status shows valid UTF-8 as it is (not "caf??"), control characters escaped
"$PY" -c "import time; time.sleep(30)" "café" "$(printf 'x\033[31my')" &
P=$!; PIDS="$PIDS $P"
WAIT_S=3 wait_for tracked "$P" || fail "$P not tracked"
COLUMNS=200 "$APX" status > "$T/st" || fail "apx status"
grep "^ *$P " "$T/st" | grep -qF 'python3 -c import time; time.sleep(30) café x\x1b[31my' ||
	fail "UTF-8 or escapes: $(grep "^ *$P " "$T/st")"
kill "$P"; wait "$P" 2>/dev/null

# 5. the summary folder: listed once, then only when someone else changed it
stop_daemon
rm -rf "$T/state"
write_conf "max_summaries = 3"
start_daemon
for i in 1 2 3 4; do "$PY" -c "pass"; done
WAIT_S=3 wait_for eval '[ "$(stat_of summaries)" -ge 4 ]' || fail "4 summaries not written"
[ "$(stat_of summary_rescans)" = 1 ] || fail "folder listed $(stat_of summary_rescans) times for 4 summaries"
[ "$(ls "$T"/state/0/*.apx | wc -l)" = 3 ] || fail "$(ls "$T"/state/0 | wc -l) summaries kept (max 3)"
# a file the daemon did not write, older than all: seen at the next write, removed first
cp "$(ls "$T"/state/0/*.apx | head -n 1)" "$T/state/0/19990101T000000Z-1-planted.apx"
touch -d 1999-01-01 "$T/state/0/19990101T000000Z-1-planted.apx"
"$PY" -c "pass"
WAIT_S=3 wait_for eval '[ "$(stat_of summaries)" -ge 5 ]' || fail "5th summary not written"
[ "$(stat_of summary_rescans)" = 2 ] || fail "a changed folder not listed again ($(stat_of summary_rescans))"
[ -e "$T/state/0/19990101T000000Z-1-planted.apx" ] && fail "the planted oldest file was not pruned"
[ "$(ls "$T"/state/0/*.apx | wc -l)" = 3 ] || fail "$(ls "$T"/state/0 | wc -l) summaries after the change"
stop_daemon

# 5b. a folder its user stuffed with 70,000 files (before the fix: 0.64 s of the loop per listing,
# for every user; files past the scan cap never pruned): listed a step a loop turn while the
# control socket answers at once, and pruned to max_summaries whole
write_conf "max_summaries = 50"
start_daemon
"$PY" -c "
import os
d = '$T/state/0'
os.makedirs(d, mode=0o700, exist_ok=True)
for i in range(70000):
    os.close(os.open('%s/19990101T%06dZ-1-planted.apx' % (d, i), os.O_CREAT | os.O_WRONLY, 0o600))
"
"$PY" -c "pass"
ping=$($RAW "$T/sock" ping 40) || fail "pings during the listing"
WAIT_S=60 wait_for eval '[ "$(ls "$T/state/0" | wc -l)" -le 51 ]' ||
	fail "not pruned: $(ls "$T/state/0" | wc -l) files"
echo "slowest ping while listing 70,000 files: $ping s"
awk -v p="$ping" 'BEGIN { exit !(p < 0.3) }' || fail "the loop stalled: a ping took $ping s"
[ "$(stat_of summaries_pruned)" -ge 69950 ] || fail "summaries_pruned $(stat_of summaries_pruned)"
[ "$(ls "$T"/state/0/*python3*.apx 2>/dev/null | wc -l)" -ge 1 ] || fail "the new summary was pruned"
stop_daemon

# 6. max_tracked_per_user: a non-root user gets at most its share; root is not capped
if command -v useradd >/dev/null; then
	U=apxh$$
	useradd -M -d /nonexistent -s /usr/sbin/nologin "$U" || fail "useradd $U"
	CLEANUP_EXTRA="userdel $U 2>/dev/null || echo 'warning: userdel $U failed'"
	UID2=$(id -u "$U")
	write_conf "max_tracked = 40
max_tracked_per_user = 2"
	start_daemon
	for i in 1 2 3 4; do
		( exec setpriv --reuid="$UID2" --regid="$(id -g "$U")" --clear-groups -- "$PY" -c "import time; time.sleep(60)" ) &
		PIDS="$PIDS $!"
	done
	start_python 60; R1=$LAST
	start_python 60; R2=$LAST
	start_python 60; R3=$LAST
	WAIT_S=3 wait_for tracked "$R3" || fail "root's third process not tracked"
	tracked "$R1" && tracked "$R2" || fail "root capped"
	sleep 0.5
	n=$("$APX" status --json | grep -o "\"uid\":$UID2," | wc -l)
	[ "$n" = 2 ] || fail "$n processes of uid $UID2 tracked (max_tracked_per_user = 2)"
	[ "$(stat_of untracked_user_cap)" -ge 2 ] || fail "untracked_user_cap $(stat_of untracked_user_cap)"
	grep -q "max_tracked_per_user (2) reached by uid $UID2: pid [0-9]* not tracked" "$T/log" ||
		fail "per-user cap not logged"
	stop_daemon
else
	echo "note: no useradd: max_tracked_per_user not checked"
fi
echo "ok"
