#!/bin/sh
# heldout-readme.sh APX SRCDIR PYTHON3 - the README quotes the held-out suite's scores:
# suite-check.py --report-only on tests/fixtures/heldout gives the four hit rates, and README.md
# must carry each of them as "held-out: <what> N of M". The held-out traces are scored, never
# tuned on; this test keeps the quoted numbers true when the rules change. Called by ctest.
set -u
apx=$1 src=$2 py=$3
out=$("$py" "$src/tests/integration/suite-check.py" "$apx" "$src" \
	--fixtures tests/fixtures/heldout --report-only) || { echo "FAIL: suite-check"; exit 1; }
fail=0
for what in "planted problem #1" "estimate within 30 %" "fixed variants clean" \
	"clean models clean"; do
	got=$(printf '%s\n' "$out" | sed -n "s/^  $what *\([0-9]* of [0-9]*\) .*/\1/p")
	[ -n "$got" ] || { echo "FAIL: no '$what' score in suite-check's output"; fail=1; continue; }
	if grep -qF "held-out: $what $got" "$src/README.md"; then
		echo "PASS  $what: $got, as README.md says"
	else
		echo "FAIL: suite-check scores '$what' $got; README.md does not say 'held-out: $what $got'"
		fail=1
	fi
done
exit $fail
