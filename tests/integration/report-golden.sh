#!/bin/sh
# report-golden.sh - `apx report --format json` on committed traces equals the golden files in
# tests/golden/ (the JSON schema and every number are stable; torch.profiler traces of
# tests/fixtures/kineto in tests/golden/kineto/), the CSV and HTML of a few equal
# tests/golden/csv/ and tests/golden/html/, the H200 hardware-counter traces' (tests/fixtures/hwc;
# --replay-flush's in flush/, as flush-*) JSON and metrics-section text tests/golden/hwc/, the
# capture-range traces' (tests/fixtures/capture) JSON tests/golden/capture/, and the text report of each renders within
# 100 columns. Called by ctest: APX SRCDIR; with a third argument "update" it
# rewrites the golden files instead (review the diff before committing).
set -u
apx=$1 src=$2 mode=${3:-check}
cd "$src" || exit 1
fail=0 n=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
for trace in tests/fixtures/sample.apx tests/fixtures/real/*.apx tests/fixtures/kineto/*.json.gz \
	tests/fixtures/hwc/*.apx tests/fixtures/hwc/flush/*.apx tests/fixtures/capture/*.apx; do
	[ -e "$trace" ] || continue
	case $trace in
	*.json.gz) golden=tests/golden/kineto/$(basename "$trace" .json.gz).json ;;
	*/hwc/flush/*) golden=tests/golden/hwc/flush-$(basename "$trace" .apx).json ;;
	*/hwc/*) golden=tests/golden/hwc/$(basename "$trace" .apx).json ;;
	*/capture/*) golden=tests/golden/capture/$(basename "$trace" .apx).json ;;
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
# the text of the metrics section (PM sampling, kernel counters) of the H200 hardware-counter
# traces: the report's metric maths on real data, as text
for trace in tests/fixtures/hwc/*.apx tests/fixtures/hwc/flush/*.apx; do
	[ -e "$trace" ] || continue
	case $trace in
	*/flush/*) golden=tests/golden/hwc/flush-$(basename "$trace" .apx).metrics.txt ;;
	*) golden=tests/golden/hwc/$(basename "$trace" .apx).metrics.txt ;;
	esac
	"$apx" report --color never -s metrics "$trace" >"$tmp" 2>/dev/null
	if [ $? -gt 1 ]; then echo "FAIL: $trace: -s metrics failed"; fail=1; continue; fi
	if [ "$mode" = update ]; then
		mkdir -p tests/golden/hwc && cp "$tmp" "$golden"
	elif ! cmp -s "$tmp" "$golden"; then
		echo "FAIL: $trace: the metrics section differs from $golden"
		diff "$golden" "$tmp" | head -20; fail=1
	fi
	n=$((n + 1))
done
# the document's CSV and HTML emitters on a few traces (tests/golden/csv, tests/golden/html):
# every table, the time series, the plots
for trace in tests/fixtures/sample.apx tests/fixtures/real/sync_every_step.apx \
	tests/fixtures/real/nvperfd_pageable.apx tests/fixtures/real/pageable_h2d.apx \
	tests/fixtures/real/fork_and_subprocess.apx; do
	for fmt in csv html; do
		case $fmt:$trace in html:*pageable_h2d*|html:*fork_and*) continue ;; esac
		golden=tests/golden/$fmt/$(basename "$trace" .apx).$fmt
		"$apx" report --format "$fmt" --force -o "$tmp" "$trace" 2>/dev/null
		if [ $? -gt 1 ]; then echo "FAIL: $trace: --format $fmt failed"; fail=1; continue; fi
		if [ "$mode" = update ]; then
			mkdir -p "tests/golden/$fmt" && cp "$tmp" "$golden"
		elif ! cmp -s "$tmp" "$golden"; then
			echo "FAIL: $trace: --format $fmt differs from $golden"
			diff "$golden" "$tmp" | head -20; fail=1
		fi
	done
	n=$((n + 1))
done
# --section works for every format: only the kernels table
"$apx" report --format csv -s kernels tests/fixtures/sample.apx 2>/dev/null | head -1 |
	grep -q '^name,total_ns,' || { echo "FAIL: csv -s kernels"; fail=1; }
"$apx" report --format html -s kernels tests/fixtures/sample.apx 2>/dev/null >"$tmp"
grep -q '<section id="kernels">' "$tmp" && ! grep -q '<section id="summary">' "$tmp" ||
	{ echo "FAIL: html -s kernels"; fail=1; }
"$apx" report --format json -s kernels,checks tests/fixtures/sample.apx 2>/dev/null |
	python3 -c 'import json, sys; sys.exit(sorted(json.load(sys.stdin)) != ["checks", "kernels", "schema"])' ||
	{ echo "FAIL: json -s kernels,checks"; fail=1; }
# start-up and idle are the document's sections in every format: -s startup,idle
t=tests/fixtures/real/sync_every_step.apx
"$apx" report --color never -s startup,idle "$t" 2>/dev/null >"$tmp"
grep -q '^Start-up (before the steady state)$' "$tmp" && grep -q '^GPU idle time' "$tmp" &&
	! grep -q '^Summary' "$tmp" || { echo "FAIL: text -s startup,idle"; fail=1; }
"$apx" report --format json -s startup,idle "$t" 2>/dev/null |
	python3 -c 'import json, sys; sys.exit(list(json.load(sys.stdin)) != ["schema", "startup", "idle", "timelines"])' ||
	{ echo "FAIL: json -s startup,idle"; fail=1; }
"$apx" report --format csv -s startup,idle "$t" 2>/dev/null >"$tmp"
grep -q '^# startup/startup$' "$tmp" && grep -q '^# idle/idle_by_cause$' "$tmp" &&
	! grep -q '^# summary/' "$tmp" || { echo "FAIL: csv -s startup,idle"; fail=1; }
"$apx" report --format html -s startup,idle "$t" 2>/dev/null >"$tmp"
grep -q '<section id="startup">' "$tmp" && grep -q '<section id="idle">' "$tmp" &&
	! grep -q '<section id="kernels">' "$tmp" || { echo "FAIL: html -s startup,idle"; fail=1; }
# -o FILE writes what stdout would get (text: escaped the same way, no colour)
out=$(mktemp) || exit 1
"$apx" report --color never tests/fixtures/corrupt/hostile-strings.apx >"$tmp" 2>/dev/null
"$apx" report --force -o "$out" tests/fixtures/corrupt/hostile-strings.apx 2>/dev/null
cmp -s "$tmp" "$out" || { echo "FAIL: report -o differs from stdout"; fail=1; }
grep -q "$(printf '\033')" "$out" && { echo "FAIL: report -o: a raw escape in the file"; fail=1; }
rm -f "$out"
"$apx" report -o /nonexistent/dir/r.html -f html tests/fixtures/sample.apx 2>/dev/null
[ $? -eq 1 ] || { echo "FAIL: report -o into a missing directory: not exit 1"; fail=1; }
# a run's process files come along: FILE.<pid> with the same run id, not FILE.other
dir=$(mktemp -d) || exit 1
cp tests/fixtures/sample.apx "$dir/data.apx"
cp tests/fixtures/sample.apx "$dir/data.apx.77"
cp tests/fixtures/sample.apx "$dir/data.apx.old"
"$apx" report -s summary "$dir/data.apx" 2>/dev/null | grep -q "2 files;" || { echo "FAIL: FILE.<pid> not read"; fail=1; }
"$apx" report --single -s summary "$dir/data.apx" 2>/dev/null | grep -q "1 file;" || { echo "FAIL: --single"; fail=1; }
rm -rf "$dir"
# the idle stacks as text: each row's time (a step) a column of its own before its stack, the
# header's per-step figure named, every line within 100 columns (a real H100 trace)
"$apx" report --color never -s idle-stacks tests/fixtures/suite/loader_pinned_fixed.apx \
	2>/dev/null >"$tmp"
grep -q "GPU-idle gaps: .* in all, .* a step$" "$tmp" || { echo "FAIL: idle stacks: header"; fail=1; }
rows=$(grep -c "^  [0-9.]* [mun]*s a step  *[^ ]" "$tmp")
glued=$(grep -c "a step[^ ]" "$tmp")
[ "$rows" -ge 3 ] && [ "$glued" = 0 ] ||
	{ echo "FAIL: idle stacks: $rows rows, $glued with the stack glued to the time"; fail=1; }
awk 'length($0) > 100 { bad = 1 } END { exit bad }' "$tmp" ||
	{ echo "FAIL: idle stacks: a line over 100 columns"; fail=1; }

[ $fail -eq 0 ] && echo "report-golden: $n traces match their golden JSON/CSV/HTML and fit 100 columns"
exit $fail
