#!/bin/sh
# progress.sh APX SRCDIR: the progress line of apx report, export and diff (cli/progress.h).
# APX_PROGRESS=1 forces it with stderr in a file: the steps appear and the line ends erased;
# stdout is the same with it, with APX_PROGRESS=0 and without either (stderr not a terminal:
# nothing at all on stderr's side either).
set -u
apx=$1
src=$2
a=$src/tests/fixtures/suite/sync_item_planted.apx
b=$src/tests/fixtures/suite/sync_item_fixed.apx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
esc=$(printf '\033')
cr=$(printf '\r')

no() { echo "FAIL: $*"; fail=1; }

# $1 name; the command after it; writes $tmp/$1.{on,off,none}.{out,err}
run3() {
	n=$1
	shift
	APX_PROGRESS=1 "$@" >"$tmp/$n.on.out" 2>"$tmp/$n.on.err"
	APX_PROGRESS=0 "$@" >"$tmp/$n.off.out" 2>"$tmp/$n.off.err"
	env -u APX_PROGRESS "$@" >"$tmp/$n.none.out" 2>"$tmp/$n.none.err"
	cmp -s "$tmp/$n.on.out" "$tmp/$n.off.out" || no "$n: stdout differs with APX_PROGRESS=1"
	cmp -s "$tmp/$n.none.out" "$tmp/$n.off.out" || no "$n: stdout differs without APX_PROGRESS"
	cmp -s "$tmp/$n.none.err" "$tmp/$n.off.err" || no "$n: stderr differs without APX_PROGRESS"
	if grep -q "$esc" "$tmp/$n.none.err" || grep -q "$cr" "$tmp/$n.none.err"; then
		no "$n: a progress line without a terminal"
	fi
	# the forced stderr, its progress lines removed, is the plain one
	sed "s/$cr$esc\[K[^$cr]*//g; s/$cr$esc\[K//g" "$tmp/$n.on.err" >"$tmp/$n.on.stripped"
	cmp -s "$tmp/$n.on.stripped" "$tmp/$n.off.err" || no "$n: messages differ with APX_PROGRESS=1"
}

# $1 name, $2 the steps wanted (grep -E)
steps() {
	tr '\r' '\n' <"$tmp/$1.on.err" >"$tmp/$1.lines"
	grep -Eq "$2" "$tmp/$1.lines" || no "$1: no progress line matching '$2'"
	# the last bytes of stderr (after the last message): the erase
	last=$(tail -c 4 "$tmp/$1.on.err" | od -An -c | tr -d ' \n')
	[ "$last" = '\r033[K' ] || no "$1: the line is not erased at the end ($last)"
}

run3 report "$apx" report "$a"
steps report 'apx report: reading .*sync_item_planted\.apx [0-9.]+ [kMG]?B of [0-9.]+ [kMG]?B \([0-9]+ %\)'
steps report 'apx report: analysing'
run3 json "$apx" report --format json "$a"
steps json 'apx report: writing the report'
run3 diff "$apx" diff "$a" "$b"
steps diff 'apx diff: reading .*sync_item_fixed\.apx'
cd "$tmp" || exit 1
APX_PROGRESS=1 "$apx" export --format chrome -o e1.json "$a" >e.on.out 2>e.on.err
"$apx" export --format chrome -o e2.json "$a" >e.off.out 2>e.off.err
cmp -s e1.json e2.json || no "export: the file differs with APX_PROGRESS=1"
grep -q "apx export: writing e1.json" e.on.err || no "export: no writing line"
grep -q "apx export: reading" e.on.err || no "export: no reading line"
grep -q "$esc" e.off.err && no "export: a progress line without a terminal"
# a name from the command line is escaped on the line (termsafe.h)
cp "$a" "$(printf 'x\033]0;t\007.apx')"
APX_PROGRESS=1 "$apx" report "$(printf 'x\033]0;t\007.apx')" >/dev/null 2>n.err
grep -q 'reading x\\x1b\]0;t\\x07\.apx' n.err || no "a file name not escaped on the line"
[ $fail = 0 ] && echo "progress: ok"
exit $fail
