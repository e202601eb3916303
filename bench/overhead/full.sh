#!/bin/bash
# full.sh BUILD start [RUN.PY ARGS]|collect - the whole overhead benchmark of issue 11 on the
# GPU machine, which takes longer than one device call may (about 20 minutes).
#
# `start` launches run.py for all four programs, 5 rounds, with run.py's launch-bound check at
# the end. Rounds 1-3 run every mode (23 processes; a process of a mode that pauses runs 6
# pairs of blocks, so 18 pairs a mode); rounds 4-5 run none, light and nsys only (12
# processes), which gives the whole-process ratios (nsys against none) their 5 repetitions.
# Later arguments go to run.py and override these: e.g. --full-rounds 0 for every mode in
# every round, or --modes ...,floor-pinned --only floor-pinned=resnet,tiny to price a CUPTI
# setting. It runs detached (scripts/detached.sh), so that it outlives the call, logging to
# /tmp/apx-overhead/.
#
# `collect` waits for it (up to 9 minutes a call: call it again while it says "running") and
# copies the table, the raw results and the light traces to $OUT. results.json is written
# after every round, and `run.py BUILD --table results.json` prints the tables of a cut run.
# The device machine must stay held between the calls (call again within its warm period).
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
detached=$here/../../scripts/detached.sh
dir=/tmp/apx-overhead
case "${2:-}" in
start)
	shift 2
	"$detached" start "$dir" "$build" python3 "$here/run.py" "$build" --out "$dir" \
		--modes none,floor,light,metrics,api,torch,nsys,graph --rounds 5 --full-rounds 3 \
		--keep resnet,gpt,hf,tiny "$@"
	;;
collect)
	"$detached" collect "$dir" || exit 3
	cp "$dir/run.log" "$dir/results.json" "$dir"/*.apx "${OUT:-.}/" 2>/dev/null
	sed -n '/^overhead (/,$p' "$dir/run.log"
	;;
*)
	echo "usage: full.sh BUILD start|collect" >&2
	exit 2
	;;
esac
