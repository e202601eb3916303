#!/bin/bash
# test-users.sh - per-user separation: a second user (created here, removed at the end) sees
# only their own processes and summaries through the control socket, root sees everyone's;
# the user's summary is in STATE/UID, owned by the user, mode 0600, in a 0700 folder; a user
# config that is not owned by its user is refused. Run by ctest (label daemon).
. "$(dirname "$0")/lib.sh"

command -v useradd >/dev/null || { echo "SKIP: useradd missing"; exit 77; }
U=apxt$$
useradd -M -d /nonexistent -s /usr/sbin/nologin "$U" || fail "useradd $U"
CLEANUP_EXTRA="userdel $U 2>/dev/null || echo 'warning: userdel $U failed'"	# after PIDS are reaped
UID2=$(id -u "$U")
as_user() { setpriv --reuid="$UID2" --regid="$(id -g "$U")" --clear-groups -- "$@"; }
# in the background, with $! = the command's own pid
as_user_bg() { ( exec setpriv --reuid="$UID2" --regid="$(id -g "$U")" --clear-groups -- "$@" ) & }

write_conf "max_clients = 4"	# a quarter of it per user: one connection
start_daemon
start_python 60; ROOTP=$LAST
as_user_bg "$PY" -c "import time; time.sleep(60)"
UP=$!; PIDS="$PIDS $UP"
WAIT_S=2 wait_for tracked "$UP" || fail "user process $UP not tracked"
WAIT_S=2 wait_for tracked "$ROOTP" || fail "root process $ROOTP not tracked"

as_user "$APX" status --json > "$T/u.json" || fail "apx status as $U"
grep -q "\"pid\":$UP," "$T/u.json" || fail "user does not see own process"
grep -q "\"pid\":$ROOTP," "$T/u.json" && fail "user sees root's process $ROOTP"
grep -q "\"user\":\"$U\"" "$T/u.json" || fail "user name missing"
"$APX" status --json | grep -q "\"pid\":$UP," || fail "root does not see the user's process"

kill "$UP" "$ROOTP"; wait "$UP" "$ROOTP" 2>/dev/null
WAIT_S=3 wait_for test -d "$T/state/$UID2" || fail "no state folder for uid $UID2"
WAIT_S=3 wait_for count_files "$T/state/$UID2" "*.apx" 1 || fail "no user summary"
[ "$(stat -c '%a %U' "$T/state/$UID2")" = "700 $U" ] || fail "user folder $(stat -c '%a %U' "$T/state/$UID2")"
f=$(ls "$T/state/$UID2"/*.apx | head -1)
[ "$(stat -c '%a %U' "$f")" = "600 $U" ] || fail "user summary $(stat -c '%a %U' "$f")"
as_user "$APX" info "$f" >/dev/null || fail "user cannot read own summary"
as_user "$APX" history --json > "$T/h.json" || fail "apx history as user"
grep -q "\"pid\":$UP," "$T/h.json" || fail "user history lacks own process"
grep -q "\"pid\":$ROOTP," "$T/h.json" && fail "user history shows root's process"
"$APX" history --json -n 0 | grep -q "\"pid\":$UP," || fail "root history lacks the user's"

# per-user client cap: while the user holds one idle connection, a second is refused
as_user_bg "$PY" -c "
import socket, time
s = socket.socket(socket.AF_UNIX); s.connect('$T/sock'); time.sleep(3)"
HOLD=$!; PIDS="$PIDS $HOLD"
sleep 0.5
out=$(as_user "$APX" status 2>&1) && fail "second connection of the user accepted"
echo "$out" | grep -q "too many clients" || fail "client cap message: $out"
"$APX" status >/dev/null || fail "root refused while a user holds a connection"
kill "$HOLD"; wait "$HOLD" 2>/dev/null

# a user config file owned by someone else is refused (and logged), defaults kept
echo "track = no" > "$T/user-$UID2.conf"	# owned by root
as_user_bg "$PY" -c "import time; time.sleep(60)"
UP2=$!; PIDS="$PIDS $UP2"
WAIT_S=2 wait_for tracked "$UP2" || fail "user process tracked despite a foreign config"
grep -q "config of uid $UID2 rejected.*expected a file owned by uid $UID2" "$T/log" ||
	fail "foreign-owned user config not refused"
# owned by the user: track = no is honoured for processes started afterwards
chown "$U" "$T/user-$UID2.conf"
sleep 0.3
as_user_bg "$PY" -c "import time; time.sleep(60)"
UP3=$!; PIDS="$PIDS $UP3"
sleep 1
tracked "$UP3" && fail "track = no not honoured"
tracked "$UP2" || fail "process started before the change lost"
echo "ok"
