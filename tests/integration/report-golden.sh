#!/bin/sh
# report-golden.sh - `apx report --format json` on committed traces equals the golden files in
# tests/golden/ (the JSON schema and every number are stable; torch.profiler traces of
# tests/fixtures/kineto in tests/golden/kineto/), and the text report of each renders within
# 100 columns. Called by ctest: APX SRCDIR; with a third argument "update" it
# rewrites the golden files instead (review the diff before committing).
set -u
apx=$1 src=$2 mode=${3:-check}
cd "$src" || exit 1
fail=0 n=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
for trace in tests/fixtures/sample.apx tests/fixtures/real/*.apx tests/fixtures/kineto/*.json.gz; do
	[ -e "$trace" ] || continue
	case $trace in
	*.json.gz) golden=tests/golden/kineto/$(basename "$trace" .json.gz).json ;;
	*) golden=tests/golden/$(basename "$trace" .apx).json ;;
	esac
	"$apx" report --format json "$trace" >"$tmp" 2>/dev/null
	rc=$?
	if [ $rc -gt 1 ]; then echo "FAIL: $trace: exit $rc"; fail=1; continue; fi
	python3 -m json.tool "$tmp" >/dev/null || { echo "FAIL: $trace: not valid JSON"; fail=1; continue; }
	if [ "$mode" = update ]; then
		cp "$tmp" "$golden"
	elif ! cmp -s "$tmp" "$golden"; then
		echo "FAIL: $trace: JSON differs from $golden"; diff "$golden" "$tmp" | head -20; fail=1
	fi
	"$apx" report --color never "$trace" 2>/dev/null |
		awk -v t="$trace" 'length($0) > 100 { print "FAIL: " t ": line over 100 columns: " $0; bad = 1 } END { exit bad }' ||
		fail=1
	n=$((n + 1))
done
# a run's process files come along: FILE.<pid> with the same run id, not FILE.other
dir=$(mktemp -d) || exit 1
cp tests/fixtures/sample.apx "$dir/data.apx"
cp tests/fixtures/sample.apx "$dir/data.apx.77"
cp tests/fixtures/sample.apx "$dir/data.apx.old"
"$apx" report -s summary "$dir/data.apx" 2>/dev/null | grep -q "2 files;" || { echo "FAIL: FILE.<pid> not read"; fail=1; }
"$apx" report --single -s summary "$dir/data.apx" 2>/dev/null | grep -q "1 file;" || { echo "FAIL: --single"; fail=1; }
rm -rf "$dir"

[ $fail -eq 0 ] && echo "report-golden: $n traces match their golden JSON and fit 100 columns"
exit $fail
