#!/bin/sh
# ranks-select.sh - apx analyze --ranks LIST (APX_RANKS), no GPU needed: the collector's
# InitializeInjection, called as the CUDA driver would (python3's ctypes), starts in a rank of
# the list (here it cannot initialise CUPTI, so it writes its fallback trace FILE.rank<R>.<pid>)
# and in a process without RANK, and in a rank outside the list does nothing at all: no trace,
# no message. Also the option's syntax errors (exit 2). Usage: ranks-select.sh APX INJECT_SO
set -eu
apx=$1 lib=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
init() {	# $1: APX_RANKS, $2: RANK ("" = unset), $3: output
	if [ -n "$2" ]; then
		APX_OUTPUT=$3 APX_RANKS=$1 RANK=$2 python3 -c "import ctypes, sys; sys.exit(ctypes.CDLL(sys.argv[1]).InitializeInjection() != 1)" "$lib" 2>"$3.err"
	else
		APX_OUTPUT=$3 APX_RANKS=$1 python3 -c "import ctypes, sys; sys.exit(ctypes.CDLL(sys.argv[1]).InitializeInjection() != 1)" "$lib" 2>"$3.err"
	fi
}
traces() { ls "$1"* 2>/dev/null | grep -v '\.err$' | wc -l; }
expect() {
	if [ "$2" != "$3" ]; then echo "FAIL: $1: $2, expected $3"; fail=1; else echo "ok: $1"; fi
}
init 0,3,8-15 12 "$tmp/in.apx"
expect "rank 12 of 0,3,8-15 writes its trace" "$(traces "$tmp/in.apx.rank12.")" 1
init 0,3,8-15 5 "$tmp/out.apx"
expect "rank 5 of 0,3,8-15 writes nothing" "$(traces "$tmp/out.apx")" 0
expect "rank 5 says nothing" "$(wc -c < "$tmp/out.apx.err")" 0
init 0 "" "$tmp/norank.apx"
expect "a process without RANK is collected" "$(traces "$tmp/norank.apx")" 1
for bad in "" 3- 5-2 1,,2 x; do
	if "$apx" analyze --ranks "$bad" -o "$tmp/bad.apx" -- true 2>/dev/null; then
		echo "FAIL: --ranks '$bad' accepted"; fail=1
	else
		rc=$?; expect "--ranks '$bad' is a usage error" "$rc" 2
	fi
done
exit $fail
