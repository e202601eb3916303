#!/bin/bash
# run.sh BUILD start|collect - tests/gpu/suite/run.py on the GPU machine, detached
# (scripts/detached.sh) so that it spans device calls (about 18 minutes): `start` launches it
# logging to /tmp/apx-suite/; `collect` waits up to 9 minutes (call it again while it says
# "running"), then copies the traces and facts.json to $OUT/suite (commit them as
# tests/fixtures/suite/).
# The measured saving (facts.json diff_ms, what suite-check compares apx's estimate with) is,
# for every case programs.PAIRABLE allows, the median difference of adjacent planted/fixed
# blocks timed in one process (3 processes of `programs.py CASE paired`, 6 pairs each), no
# longer the difference of separate processes' medians: on the H200 machine the same program's
# step time varies by up to 1.8x from process to process (some run at ~55 % speed throughout;
# adjacent blocks of one process agree within a few %), so a difference across processes was
# that spread as much as the planted problem. replica, which cannot be paired, gets 5
# processes per variant. The traced runs are as before: one process per variant.
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
detached=$here/../../../scripts/detached.sh
dir=/tmp/apx-suite
case "${2:-}" in
start)
	"$detached" start "$dir" "$build" python3 "$here/run.py" "$build" "$dir/out"
	;;
collect)
	"$detached" collect "$dir" || exit 3
	mkdir -p "${OUT:-.}/suite" && cp "$dir"/out/* "$dir/run.log" "${OUT:-.}/suite/"
	cat "$dir/run.log"
	;;
*)
	echo "usage: run.sh BUILD start|collect" >&2
	exit 2
	;;
esac
