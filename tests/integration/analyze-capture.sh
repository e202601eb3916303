#!/bin/sh
# analyze-capture.sh APX SRCDIR - `apx analyze`'s summary of a capture-range trace (a real H200
# trace, tests/fixtures/capture/gpt_toggle.apx: 3 ranges, 1.33 s collected of 8.42 s) counts
# GPU busy over the collected time and says how many ranges there were. The "program" copies
# the committed trace to the output path, so no GPU is needed; the summary reads it back as it
# reads the collector's. Called by ctest.
set -u
apx=$1 src=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$apx" analyze -f -o "$tmp/t.apx" -- cp "$src/tests/fixtures/capture/gpt_toggle.apx" "$tmp/t.apx" \
	2>"$tmp/err" >/dev/null
rc=$?
fail=0
[ $rc = 0 ] || { echo "FAIL: apx analyze exit $rc"; fail=1; }
grep -q '^apx: collected in 3 capture ranges (cudaProfilerStart/Stop): 1\.33 s of the run$' \
	"$tmp/err" || { echo "FAIL: no capture line"; fail=1; }
grep -q '^apx: GPU busy 73\.4% of the collected time; 34128 kernels' "$tmp/err" ||
	{ echo "FAIL: GPU busy is not of the collected time"; fail=1; }
[ $fail = 0 ] && echo "ok: the summary counts the 3 capture ranges' 1.33 s" || cat "$tmp/err"
exit $fail
