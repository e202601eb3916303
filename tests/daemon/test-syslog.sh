#!/bin/bash
# test-syslog.sh - nvperfd logs to syslog with facility LOCAL3: a listener bound to /dev/log
# (made by this test when the machine has no syslog daemon; skipped when one owns /dev/log)
# must receive the daemon's lines with priority LOCAL3 (19 * 8 + severity), tagged nvperfd,
# including the line of an ended Python process, and the "config is gone" line even with
# syslog = no.
. "$(dirname "$0")/lib.sh"

if [ -e /dev/log ]; then
	echo "SKIP: /dev/log exists (a syslog daemon owns it); the listener needs it free"
	exit 77
fi
"$PY" - "$T/syslog.txt" <<'EOP' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
os.chmod("/dev/log", 0o666)
open(sys.argv[1] + ".ready", "w").close()
s.settimeout(20)
with open(sys.argv[1], "a") as out:
    try:
        while True:
            out.write(s.recv(65536).decode("utf-8", "replace") + "\n")
            out.flush()
    except socket.timeout:
        pass
EOP
LISTENER=$!
PIDS="$PIDS $LISTENER"
CLEANUP_EXTRA="rm -f /dev/log"
ready() { [ -e "$T/syslog.txt.ready" ]; }
wait_for ready || fail "syslog listener did not start"

write_conf
sed -i 's/^syslog = no$/syslog = yes/' "$CONF"
start_daemon
start_python 0.5
P=$LAST
wait "$P" 2>/dev/null
logged() { grep -q "pid $P uid 0 \"python3\" ended" "$T/syslog.txt" 2>/dev/null; }
WAIT_S=5 wait_for logged || fail "no syslog line for the ended process $P: $(cat "$T/syslog.txt")"
# every line: <PRI>... with PRI = LOCAL3 (19) * 8 + severity 0..7, tag nvperfd[PID]
# (other programs' lines, e.g. another test's useradd, may reach the listener too: left out)
bad=$(grep -v '^$' "$T/syslog.txt" | grep -vE '^<15[2-9]>.*nvperfd\[[0-9]+\]: ' |
	grep -vE '^<[0-9]+>[A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} [A-Za-z0-9_.-]+\[[0-9]+\]: ')
bad=$bad$(grep 'nvperfd\[' "$T/syslog.txt" | grep -vE '^<15[2-9]>')
[ -z "$bad" ] || fail "syslog lines without facility LOCAL3 or tag: $bad"
grep -q "^<158>.*ended" "$T/syslog.txt" || fail "the process line is not LOCAL3.info"
stop_daemon

# the machine config deleted while running, with syslog = no: that line reaches syslog all the
# same (LOCAL3.err), besides the current log
write_conf
start_daemon
rm "$CONF"
gone() { grep -q "^<155>.*nvperfd\[[0-9]*\]: config '$CONF' is gone" "$T/syslog.txt"; }
WAIT_S=5 wait_for gone || fail "config deletion not in syslog: $(tail -n 3 "$T/syslog.txt")"
grep -q "is gone" "$T/log" || fail "config deletion not in the log file"
stop_daemon
echo "ok: $(grep -c . "$T/syslog.txt") syslog lines, all LOCAL3, tagged nvperfd"
