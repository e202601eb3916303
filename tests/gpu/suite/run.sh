#!/bin/bash
# run.sh BUILD start|collect - tests/gpu/suite/run.py on the GPU machine, detached so that it
# spans device calls (about 12 minutes): `start` launches it logging to /tmp/apx-suite/;
# `collect` waits up to 9 minutes (call it again while it says "running"), then copies the
# traces and facts.json to $OUT/suite (commit them as tests/fixtures/suite/).
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
dir=/tmp/apx-suite
case "${2:-}" in
start)
	rm -rf "$dir" && mkdir -p "$dir"
	if ldd "$build/libapx-inject.so" | grep -q "not found"; then
		d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
		export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
	setsid bash -c "PYTHONUNBUFFERED=1 taskset -c 2-9 python3 '$here/run.py' '$build' '$dir/out' \
		>'$dir/run.log' 2>&1; touch '$dir/done'" </dev/null >/dev/null 2>&1 &
	echo "started; logs in $dir"
	;;
collect)
	for _ in $(seq 108); do
		[ -e "$dir/done" ] && break
		sleep 5
	done
	tail -5 "$dir/run.log"
	[ -e "$dir/done" ] || { echo "running: call collect again"; exit 3; }
	mkdir -p "${OUT:-.}/suite" && cp "$dir"/out/* "$dir/run.log" "${OUT:-.}/suite/"
	cat "$dir/run.log"
	;;
*)
	echo "usage: run.sh BUILD start|collect" >&2
	exit 2
	;;
esac
