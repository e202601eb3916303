#!/bin/sh
# info-fixtures.sh - `apx info` on the committed fixtures: exit status and message for every
# damaged file in tests/fixtures/corrupt (listed in EXPECTED), the complete sample, and that
# the generator still writes the committed bytes. Called by ctest: APX GEN SRCDIR.
set -u
apx=$1 gen=$2 src=$3
fix=$src/tests/fixtures
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The fixtures are what the generator writes today (the format has not drifted).
mkdir -p "$tmp/gen/corrupt"
"$gen" "$tmp/gen" || { echo "FAIL: gen-fixtures"; exit 1; }
for f in "$tmp"/gen/sample.apx "$tmp"/gen/corrupt/*.apx; do
	rel=${f#"$tmp"/gen/}
	cmp -s "$f" "$fix/$rel" || { echo "FAIL: $rel differs from what gen-fixtures writes"; fail=1; }
done

"$apx" info "$fix/sample.apx" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: sample.apx exit $rc"; cat "$tmp/err"; fail=1; }
grep -q "all 35 chunk checksums and all records valid" "$tmp/out" || { echo "FAIL: sample.apx summary"; cat "$tmp/out"; fail=1; }
grep -q "kernel  *1  *3 " "$tmp/out" || { echo "FAIL: sample.apx kernel count"; cat "$tmp/out"; fail=1; }

n=0
while IFS='	' read -r name want msg; do
	case $name in '#'*|'') continue ;; esac
	n=$((n + 1))
	"$apx" info "$fix/corrupt/$name" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: $name: exit $rc, want $want"; cat "$tmp/err"; fail=1; continue
	fi
	if ! grep -qF -- "$msg" "$tmp/err" "$tmp/out"; then
		echo "FAIL: $name: message lacks: $msg"; cat "$tmp/err"; fail=1
	fi
done <"$fix/corrupt/EXPECTED"
[ $n -ge 16 ] || { echo "FAIL: only $n fixtures listed"; fail=1; }

# skipped chunks are not "all records valid"
"$apx" info "$fix/corrupt/unknown-chunk-type.apx" >"$tmp/out" 2>&1
grep -q "all records valid" "$tmp/out" && { echo "FAIL: skipped chunks called valid"; fail=1; }
grep -q "the records of 1 chunks were not checked" "$tmp/out" || { echo "FAIL: skipped chunks not said"; fail=1; }

# usage errors exit 2, help and version exit 0
"$apx" info >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: apx info without FILE"; fail=1; }
"$apx" info --bogus x >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: unknown option"; fail=1; }
"$apx" bogus >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: unknown command"; fail=1; }
"$apx" >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: no command"; fail=1; }
"$apx" --help | grep -q "info" || { echo "FAIL: --help"; fail=1; }
"$apx" help info | grep -q "usage: apx info" || { echo "FAIL: help info"; fail=1; }
"$apx" info --help | grep -q "Exit status" || { echo "FAIL: info --help"; fail=1; }
"$apx" --version | grep -q "^apx [0-9]" || { echo "FAIL: --version"; fail=1; }
"$apx" info /nonexistent.apx 2>"$tmp/err"; [ $? -eq 1 ] && grep -q "cannot open" "$tmp/err" || { echo "FAIL: missing file"; fail=1; }
"$apx" info "$fix" 2>"$tmp/err"; [ $? -eq 1 ] && grep -q "not a regular file" "$tmp/err" || { echo "FAIL: directory"; fail=1; }
# several files: one bad makes the exit 1, the good one is still described
"$apx" info "$fix/sample.apx" "$fix/corrupt/empty.apx" >"$tmp/out" 2>&1; [ $? -eq 1 ] && grep -q "sample.apx: complete" "$tmp/out" || { echo "FAIL: several files"; fail=1; }

[ $fail -eq 0 ] && echo "info-fixtures: $n damaged fixtures and the sample answered as documented"
exit $fail
