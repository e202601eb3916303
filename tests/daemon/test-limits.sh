#!/bin/bash
# test-limits.sh - the hard caps: max_tracked (extra processes counted, not tracked),
# max_summaries (oldest summaries removed first), max_samples (the time series is thinned, the
# whole run still covered), and a summary folder planted as a symlink is refused. Run by ctest
# (label daemon).
. "$(dirname "$0")/lib.sh"

# max_tracked (other Python processes on the machine may hold slots too: only the cap is checked)
write_conf "max_tracked = 2"
start_daemon
start_python 60; P1=$LAST
start_python 60; P2=$LAST
start_python 60; P3=$LAST
sleep 0.5
"$APX" status --stats > "$T/stats"
[ "$(awk '$1 == "tracked" { print $2 }' "$T/stats")" -le 2 ] || fail "more than max_tracked = 2"
grep -q "^untracked_cap *[1-9]" "$T/stats" || fail "untracked_cap not counted"
grep -q "max_tracked (2) reached: pid [0-9]* not tracked" "$T/log" || fail "cap not logged"
kill "$P1" "$P2" "$P3"; wait "$P1" "$P2" "$P3" 2>/dev/null
stop_daemon

write_conf "max_summaries = 3
max_samples = 16
sample_period = 0.05"
start_daemon
start_python 60; A=$LAST
WAIT_S=2 wait_for tracked "$A" || fail "$A not tracked"

# max_samples: a 2 s run at 0.05 s = 40 samples, kept in at most 16 (thinned), whole run covered
sleep 2
kill "$A"; wait "$A" 2>/dev/null
WAIT_S=3 wait_for count_files "$T/state/0" "*-$A-*" 1 || fail "no summary for $A"
f=$(ls "$T"/state/0/*-"$A"-*)
n=$("$APX" info "$f" | awk '$1 == "cpu" { print $3 }')
[ -n "$n" ] && [ "$n" -le 18 ] && [ "$n" -ge 8 ] || fail "$n CPU records in $f (max_samples 16)"
"$APX" info "$f" | grep -Eq "time span  (1\.[5-9]|[2-9]\.)" || fail "thinned series does not cover the run: $("$APX" info "$f")"

# max_summaries: 5 more runs leave 3 files, the newest
for i in 1 2 3 4 5; do "$PY" -c "pass"; done
sleep 0.5
WAIT_S=3 wait_for count_files "$T/state/0" "*.apx" 3
[ "$(ls "$T"/state/0/*.apx | wc -l)" = 3 ] || fail "$(ls "$T"/state/0 | wc -l) summaries kept (max 3)"
"$APX" status --stats | grep -q "^summaries_pruned *[1-9]" || fail "pruning not counted"

# a user folder replaced by a symlink is not followed (the summary is refused, logged)
mkdir "$T/elsewhere"
rm -rf "$T/state/0" && ln -s "$T/elsewhere" "$T/state/0"
"$PY" -c "pass"
WAIT_S=3 wait_for grep -q "cannot write its summary" "$T/log" || fail "symlinked folder followed"
[ -z "$(ls "$T/elsewhere")" ] || fail "a summary was written through the symlink"
echo "ok"
