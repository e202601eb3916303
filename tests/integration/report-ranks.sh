#!/bin/sh
# report-ranks.sh - apx report on a distributed run's traces, written by ranks-gen: a
# launcher's FILE and four ranks' FILE.rank<R>.<pid> on two hosts. FILE brings its ranks along;
# without FILE (torchrun's launcher uses no GPU and writes none) the ranks' traces beside it are
# read, and stderr says so; the ranks and collectives sections and the rules of several ranks in
# JSON, text (within 100 columns), CSV and HTML; --single on one rank's trace; a FILE with
# nothing beside it is an error; a single-process trace has neither section. Called by ctest:
# APX RANKS_GEN SRCDIR.
set -u
apx=$1 gen=$2 src=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }
has() { grep -qF -- "$2" "$1" || no "$3: no '$2' in $(basename "$1")"; }

"$gen" "$dir/run.apx" 4 || { echo "FAIL: ranks-gen"; exit 1; }
ranks='"ranks":{"world_size":4,"hosts":2,"ranks_with_collectives":4,"per_rank":[{"rank":0,'

"$apx" report --format json "$dir/run.apx" >"$dir/a.json" 2>"$dir/a.err" || no "run.apx: exit $?"
has "$dir/a.json" "$ranks" "run.apx"
has "$dir/a.json" '"collectives":{"link":{"kind":null,"peak_bps":null,"why":"the ranks are on 2 hosts' "run.apx"
has "$dir/a.json" '"functions":[{"func":"all_reduce",' "run.apx"
has "$dir/a.json" '"rule":"straggler","severity":' "run.apx"
has "$dir/a.json" '{"rule":"small-collectives","title":' "run.apx"

# the launcher's trace gone: its ranks' are read all the same, and stderr says so
rm "$dir/run.apx"
"$apx" report --format json "$dir/run.apx" >"$dir/b.json" 2>"$dir/b.err" || no "no run.apx: exit $?"
has "$dir/b.err" "run.apx: no such file, but 4 traces of its run beside it" "no run.apx"
has "$dir/b.json" "$ranks" "no run.apx"

"$apx" report --color never -s ranks,collectives,findings "$dir/run.apx" >"$dir/c.txt" 2>/dev/null ||
	no "text: exit $?"
has "$dir/c.txt" "Ranks (the processes of a distributed run)" "text"
has "$dir/c.txt" "Collectives (NCCL; algbw and busbw as nccl-tests defines them)" "text"
has "$dir/c.txt" "straggler: rank 3" "text"
awk 'length($0) > 100 { print "FAIL: text: line over 100 columns: " $0; bad = 1 } END { exit bad }' \
	"$dir/c.txt" || fail=1

"$apx" report --format csv "$dir/run.apx" >"$dir/d.csv" 2>/dev/null || no "csv: exit $?"
has "$dir/d.csv" "# ranks/ranks" "csv"
has "$dir/d.csv" "# collectives/collectives" "csv"
"$apx" report --format html -o "$dir/e.html" "$dir/run.apx" 2>/dev/null || no "html: exit $?"
has "$dir/e.html" '<section id="ranks">' "html"
has "$dir/e.html" '<section id="collectives">' "html"

# one rank alone
"$apx" report --format json --single "$dir/run.apx.rank0.5000" >"$dir/f.json" 2>/dev/null ||
	no "--single rank 0: exit $?"
has "$dir/f.json" '"ranks_with_collectives":1,' "--single rank 0"

# nothing of the kind beside a missing FILE: the usual error
"$apx" report "$dir/none.apx" >/dev/null 2>"$dir/g.err" && no "none.apx: exit 0"
has "$dir/g.err" "cannot open" "none.apx"

# a single-process trace: neither section, no check of the rules of several ranks
"$apx" report --format json "$src/tests/fixtures/real/launch_bound.apx" >"$dir/h.json" 2>/dev/null
grep -qE '"ranks":|"collectives":|"rule":"straggler"' "$dir/h.json" &&
	no "launch_bound.apx: a section or check of several ranks"

[ $fail -eq 0 ] && echo "report-ranks: all checks passed"
exit $fail
