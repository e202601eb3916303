#!/bin/sh
# tune-check.sh APX SRCDIR - apx tune without a GPU: the runs of
# `apx analyze` are replaced by tune-analyzer.sh (APX_TUNE_ANALYZER), which hands back the
# development suite's real traces: the planted variant for runs without a fix, the
# hand-fixed one for runs with it. Checked: the finding picked and its fix (fp32-matmul ->
# tf32; allocator-churn -> no_empty_cache with PYTORCH_CUDA_ALLOC_CONF), the interleaved runs
# (3 a side, A B B A A B), the measured saving (the two traces' median step times apart, as
# apx diff measures them), the verdict, the work check, the loss comparison (same values;
# CHANGED past the fix's tolerance), findings without a fix listed with their code change,
# the changelog, a failing program, usage errors. Called by ctest.
set -u
apx=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
fx=$src/tests/fixtures/suite
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
check() {	# check WHAT FILE PATTERN: grep -q
	if grep -q -- "$3" "$2"; then echo "PASS  $1"; else echo "FAIL: $1: no '$3' in $2"; fail=1; fi
}
cd "$t" || exit 1
export APX_TUNE_ANALYZER=$src/tests/integration/tune-analyzer.sh TUNE_LOG=$t/log

# fp32_matmul: planted 10.9 ms a step, hand-fixed (TF32) 1.6 ms; the hooks' report counts
# the program's TF32 'off's overridden by API (apx_site.py)
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx \
	TUNE_REPORT_EXTRA=', "api": "fp32_precision", "count": 1, "overrides": 3,
 "overrides_allow_tf32": 1, "overrides_fp32_precision": 2' \
	"$apx" tune -d w1 -- python3 prog.py > out1 2> err1
echo "rc=$?" >> out1
check "exit 0" out1 "rc=0"
check "fp32-matmul tried with tf32" out1 "^  fix        TF32 for fp32 matmuls"
check "saves" out1 "verdict    saves time"
check "overrides by API" out1 "^  overrode   the program's TF32 'off' in the 3 runs with \
the fix: 3 through allow_tf32 / set_float32_matmul_precision, 6 through fp32_precision"
check "work the same" out1 "work       the same a step"
check "each side's runs" out1 "^  runs       without 10\.[0-9]* ms to 10\.[0-9]* ms, with"
grep -q "spread" out1 && { echo "FAIL: a spread line for runs that agree"; fail=1; } ||
	echo "PASS  no spread line when each side's runs agree"
check "loss values compared" out1 "results    loss values within 0 relative"
check "changelog: your files" out1 "your files: none changed"
check "changelog: work folder" out1 "w1/: every run's trace"
n=$(grep -c "fixes=tf32" log); [ "$n" = 3 ] && echo "PASS  3 runs with the fix" ||
	{ echo "FAIL: $n runs with the fix, 3 wanted"; fail=1; }
n=$(grep -c "fixes= " log); [ "$n" = 4 ] && echo "PASS  baseline + 3 runs without" ||
	{ echo "FAIL: $n runs without the fix, 4 wanted"; fail=1; }
order=$(ls -tr w1/*.apx 2>/dev/null | sed 's|.*/||' | tr '\n' ' ')
case $order in
"baseline.apx tf32-base-0.apx tf32-fix-0.apx tf32-fix-1.apx tf32-base-1.apx tf32-base-2.apx tf32-fix-2.apx ") echo "PASS  interleaved A B B A A B" ;;
*) echo "PASS? run order by mtime: $order (same-second mtimes may reorder)" ;;
esac
# the measured saving is the two traces' median steps apart: apx diff says the same change
want=$("$apx" diff -f json "$fx/fp32_matmul_planted.apx" "$fx/fp32_matmul_fixed.apx" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.3f" % (-d["step_time"]["change_ns"]/1e6))')
check "measured saving equals apx diff's change ($want ms)" out1 "measured $want ms"

# the second run without the fix much slower (another program's trace): the median and the
# saving stay, and a spread line says that a side's runs differ by more than the saving
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx \
	TUNE_PLANTED_ALT=$fx/loader_planted.apx "$apx" tune -d w1s -- python3 prog.py > out1s 2>&1
check "spread said" out1s "^  spread     the runs of one side differ by more than the saving"
check "median of the runs kept" out1s "measured $want ms"

# runs whose steps have not settled (a real 30-step run of the loader program, p95 2.7x its
# median): the unsteady line says so; the settled fp32_matmul runs above got none
TUNE_PLANTED=$src/tests/fixtures/tune/loader_30_steps.apx TUNE_FIXED=$fx/loader_fixed.apx \
	"$apx" tune -d w1u -- python3 prog.py > out1u 2>&1
check "unsteady said" out1u \
	"^  unsteady   a run's p95 step took 2\.[0-9]x its median step (without the fix)"
grep -q "unsteady" out1 && { echo "FAIL: an unsteady line for settled runs"; fail=1; } ||
	echo "PASS  no unsteady line for settled runs"

# --time 1: every run's program hangs after writing its trace (TUNE_SLEEP); each is ended at
# 1 s (SIGINT to its process group) and measured like any other; --steps 5 reaches every run
rm -f log
t0=$(date +%s)
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx TUNE_SLEEP=60 \
	"$apx" tune --time 1 --steps 5 -d w1t -- python3 prog.py > out1t 2>&1
rc=$?
el=$(($(date +%s) - t0))
[ $rc = 0 ] && [ $el -lt 45 ] && echo "PASS  --time: 7 hanging runs ended in ${el} s, exit 0" ||
	{ echo "FAIL: --time: exit $rc after ${el} s"; fail=1; }
check "--time: the ended runs measured" out1t "measured $want ms"
check "--steps in the changelog" out1t "environment of every run: APX_TUNE_STEPS=5"
check "--time in the changelog" out1t "every run ended after 1.0 s at most"
n=$(grep -c "steps=5" log); [ "$n" = 7 ] && echo "PASS  --steps 5 in all 7 runs" ||
	{ echo "FAIL: --steps reached $n runs, 7 wanted"; fail=1; }
# Ctrl-C (SIGINT to apx tune): the run in progress gets it through its process group, the
# tune stops at once with 130 and says where the files are
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx TUNE_SLEEP=60 \
	"$apx" tune -d w1i -- python3 prog.py > out1i 2>&1 &
tp=$!
sleep 2
t0=$(date +%s)
kill -INT $tp
wait $tp
rc=$?
el=$(($(date +%s) - t0))
[ $rc = 130 ] && [ $el -lt 5 ] && echo "PASS  Ctrl-C: exit 130 in ${el} s" ||
	{ echo "FAIL: Ctrl-C: exit $rc after ${el} s"; fail=1; }
check "Ctrl-C: said" out1i "interrupted; the runs' files are in the work folder"
# Ctrl-C during a fix's runs, after two complete runs a side (A B B A, the fifth running):
# the fix is measured on the runs done, and the stop is said
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx TUNE_SLEEP=2 \
	"$apx" tune -d w1p -- python3 prog.py > out1p 2> err1p &
tp=$!
n=0
while [ ! -e w1p/tf32-base-2.apx ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
kill -INT $tp
wait $tp
rc=$?
[ $rc = 130 ] && echo "PASS  Ctrl-C during the runs: exit 130" ||
	{ echo "FAIL: Ctrl-C during the runs: exit $rc"; fail=1; }
check "Ctrl-C during the runs: stopped said" out1p \
	"^  stopped    interrupted after 2 of 3 runs without and 2 of 3 with the fix"
check "Ctrl-C during the runs: measured on those" out1p "verdict    saves time"
check "Ctrl-C during the runs: said on stderr" err1p "interrupted; the runs' files"
# a fix under which the program hangs before writing anything: reported, the tune goes on
rm -f log
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx TUNE_HANG_FIX=tf32 \
	"$apx" tune --time 1 -d w1h -- python3 prog.py > out1h 2>&1
echo "rc=$?" >> out1h
check "--time: a hang under the fix: exit 0" out1h "rc=0"
check "--time: a hang under the fix reported" out1h \
	"verdict    not measured: 0 of 3 runs without and 3 of 3 with the fix failed"

# a fix that moves the loss values past its tolerance (tf32 allows 1 %): CHANGED
rm -f log
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx \
	TUNE_LOSS=2.5 TUNE_LOSS_FIXED=2.9 "$apx" tune -d w2 -- python3 prog.py > out2 2> err2
check "loss moved: CHANGED" out2 "results    CHANGED"
grep -q "overrode" out2 && { echo "FAIL: an overrode line with no overrides reported"; fail=1; } ||
	echo "PASS  no overrode line without overrides"

# allocator-churn: the no_empty_cache fix, with expandable segments in the environment
rm -f log
TUNE_PLANTED=$fx/empty_cache_planted.apx TUNE_FIXED=$fx/empty_cache_fixed.apx \
	"$apx" tune -d w3 --top 1 -- python3 prog.py > out3 2> err3
check "allocator-churn tried with no_empty_cache" out3 "empty_cache() does nothing"
check "expandable segments set for the fix runs" log "fixes=no_empty_cache alloc=expandable_segments:True"
check "changelog names the variable" out3 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"

# a finding without an automatic fix: its code change (sync-frequency)
TUNE_PLANTED=$fx/sync_item_planted.apx TUNE_FIXED=$fx/sync_item_fixed.apx \
	"$apx" tune -d w4 -- python3 prog.py > out4 2> err4
check "sync-frequency: a code change" out4 "not applied from outside the program"
check "no automatic fix" out4 "No finding has a fix apx can apply"

# --fix limits the fixes; a program that fails is reported and the tune says so
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx TUNE_STATUS=3 \
	"$apx" tune -d w5 -- python3 prog.py > out5 2> err5
echo "rc=$?" >> out5
check "failed baseline: exit 1" out5 "rc=1"
check "failed baseline: said" err5 "the baseline run failed (exit status 3)"
TUNE_PLANTED=$fx/fp32_matmul_planted.apx TUNE_FIXED=$fx/fp32_matmul_fixed.apx \
	"$apx" tune -d w6 --fix foreach -- python3 prog.py > out6 2> err6
check "--fix foreach: fp32-matmul left as a code change" out6 "not applied from outside"

# usage errors
"$apx" tune --runs 2 x.py > /dev/null 2> err7; echo "rc=$?" >> err7
check "--runs 2 refused" err7 "rc=2"
"$apx" tune --fix bogus x.py > /dev/null 2> err8
check "--fix bogus refused" err8 "no fix 'bogus'"
"$apx" tune > /dev/null 2> err9
check "no program refused" err9 "give the program"
[ $fail = 0 ] && echo "tune-check: all passed"
exit $fail
