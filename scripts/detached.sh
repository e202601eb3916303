#!/bin/bash
# detached.sh start DIR BUILD COMMAND... | collect DIR - a long GPU-machine job that outlives
# one device call: `start` runs COMMAND in a new session (setsid; on CPUs 2-9 when the machine
# has them, away from CPU 0's interrupts), with libcupti found
# when BUILD's collector cannot (LD_LIBRARY_PATH), logging to DIR/run.log and touching DIR/done
# at the end; `collect` waits up to 9 minutes for DIR/done (exit 3 while it runs: call it again
# within the machine's warm period). Used by bench/overhead/full.sh and tests/gpu/suite/run.sh.
set -u
case "${1:-}" in
start)
	dir=$2 build=$3
	shift 3
	rm -rf "$dir" && mkdir -p "$dir"
	if ldd "$build/libapx-inject.so" | grep -q "not found"; then
		d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
		export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
	pin=
	[ "$(nproc)" -ge 10 ] && pin="taskset -c 2-9"
	setsid bash -c 'PYTHONUNBUFFERED=1 '"$pin"' "$@" >"'"$dir"'/run.log" 2>&1; touch "'"$dir"'/done"' \
		detached "$@" </dev/null >/dev/null 2>&1 &
	echo "started; logs in $dir"
	;;
collect)
	dir=$2
	for _ in $(seq 108); do
		[ -e "$dir/done" ] && break
		sleep 5
	done
	tail -3 "$dir/run.log"
	if [ ! -e "$dir/done" ]; then
		echo "running: call collect again"
		exit 3
	fi
	;;
*)
	echo "usage: detached.sh start DIR BUILD COMMAND... | collect DIR" >&2
	exit 2
	;;
esac
