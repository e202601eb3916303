#!/bin/bash
# full.sh BUILD all|part1|part2 [RUN.PY ARGS] | table DIR1 DIR2 - the whole overhead benchmark
# of the collector on the GPU machine: `all` in one command (about 15 minutes), or part1 and part2
# in two device calls where one call may run 10 minutes at most, then `table`.
#
# Each part runs run.py in the foreground of its call and writes $OUT/results.json after every
# process, so a call cut short keeps what it measured; nothing has to survive between calls
# (detached runs were lost when the machine was taken back between calls).
#   part1  one round of every mode (none, floor, light, api, torch, nsys, graph; about 370 s
#          on the H200): the in-process pairs (6 a process) of every mode that can pause, then
#          the launch-bound check (3 repetitions, about 45 s); keeps the tiny loop's traces.
#   part2  4 rounds of none and nsys (about 100 s a round): with part1's round, the 5
#          whole-process repetitions of nsys against no profiler.
#   all    part1 into $OUT/part1, part2 into $OUT/part2, then table.
#   table  merges the two calls' results.json (run.py --table: round r of call i is round
#          "i.r", so a whole-process ratio still pairs a process with its own round's
#          no-profiler one) and prints the tables.
# Later arguments go to run.py and override these (e.g. --programs gpt,tiny).
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
if [ "${2:-}" = part1 ] || [ "${2:-}" = part2 ] || [ "${2:-}" = all ]; then
	if ldd "$build/libapx-inject.so" | grep -q "not found"; then
		d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
		export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
fi
case "${2:-}" in
part1)
	shift 2
	PYTHONUNBUFFERED=1 timeout 580 python3 "$here/run.py" "$build" --out "$out" \
		--modes none,floor,light,api,torch,nsys,graph --rounds 1 --keep tiny "$@" \
		2>&1 | tee "$out/run1.log" | tail -40
	;;
part2)
	shift 2
	PYTHONUNBUFFERED=1 timeout 540 python3 "$here/run.py" "$build" --out "$out" \
		--modes none,nsys --rounds 4 --budget 420 "$@" 2>&1 | tee "$out/run2.log" | tail -30
	;;
all)
	shift 2
	mkdir -p "$out/part1" "$out/part2"
	OUT=$out/part1 bash "$0" "$build" part1 "$@" >/dev/null
	OUT=$out/part2 bash "$0" "$build" part2 "$@" >/dev/null
	bash "$0" "$build" table "$out/part1" "$out/part2" | tee "$out/table.txt"
	;;
table)
	python3 "$here/run.py" "$build" --table "$3/results.json,$4/results.json"
	;;
*)
	echo "usage: full.sh BUILD all|part1|part2 [RUN.PY ARGS] | table DIR1 DIR2" >&2
	exit 2
	;;
esac
