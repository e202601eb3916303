#!/bin/sh
# analyze_cpu_only.sh BUILD SRC - `apx analyze` on a program that never uses CUDA (works on a
# machine without GPU or collector): it must pass the program's exit status through and write
# a valid, complete trace that says cuda_used = no. Exit 77 (skipped) without python3.
set -eu
build=$1 src=$2
command -v python3 >/dev/null 2>&1 || { echo "skipped: no python3"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
set +e
"$build/apx" analyze -o "$dir/cpu.apx" "$src/examples/cpu_only.py" 3 >"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ "$rc" = 3 ] || { echo "FAIL: exit status $rc, want 3"; cat "$dir/err"; exit 1; }
grep -q "sum of squares" "$dir/out" || { echo "FAIL: program output not passed through"; exit 1; }
grep -q "never used CUDA" "$dir/err" || { echo "FAIL: summary does not say no CUDA"; cat "$dir/err"; exit 1; }
"$build/apx-dump" "$dir/cpu.apx" >"$dir/dump"
grep -q '"status":"complete"' "$dir/dump" || { echo "FAIL: trace not complete"; exit 1; }
grep -q '"key":"cuda_used","value":"no"' "$dir/dump" || { echo "FAIL: no cuda_used=no"; cat "$dir/dump"; exit 1; }
grep -q '"exit_status":3' "$dir/dump" || { echo "FAIL: exit status not in trace"; exit 1; }
# refuses to overwrite without --force, replaces with it
set +e
"$build/apx" analyze -o "$dir/cpu.apx" "$src/examples/cpu_only.py" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { echo "FAIL: overwrite without --force gave $rc, want 2"; exit 1; }
"$build/apx" analyze -q --force -o "$dir/cpu.apx" "$src/examples/cpu_only.py" >/dev/null
echo "ok: apx analyze on a CPU-only program"
