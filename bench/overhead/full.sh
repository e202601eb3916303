#!/bin/bash
# full.sh BUILD start|collect - the whole overhead benchmark of issue 11 on the GPU machine,
# which takes longer than one device call may (about 17 minutes): `start` launches run.py for
# all four programs and six modes, 5 rounds (with run.py's launch-bound check at the end),
# detached (setsid) so that it outlives the call, logging to /tmp/apx-overhead/; `collect`
# waits for it (up to 9 minutes a call: call it again while it says "running") and copies the
# table, the raw results and the light traces to $OUT. The device machine must stay held between the calls (call again within its
# warm period).
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
dir=/tmp/apx-overhead
case "${2:-}" in
start)
	rm -rf "$dir" && mkdir -p "$dir"
	if ldd "$build/libapx-inject.so" | grep -q "not found"; then
		d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
		export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
	setsid bash -c "PYTHONUNBUFFERED=1 python3 '$here/run.py' '$build' --out '$dir' \
		--modes none,floor,light,api,torch,nsys,graph --rounds 5 --keep resnet,gpt,hf,tiny \
		>'$dir/run.log' 2>&1; touch '$dir/done'" </dev/null >/dev/null 2>&1 &
	echo "started; logs in $dir"
	;;
collect)
	for _ in $(seq 108); do
		[ -e "$dir/done" ] && break
		sleep 5
	done
	tail -3 "$dir/run.log"
	if [ ! -e "$dir/done" ]; then
		echo "running: call collect again"
		exit 3
	fi
	cp "$dir/run.log" "$dir/results.json" "$dir"/*.apx "${OUT:-.}/" 2>/dev/null
	sed -n '/^overhead (/,$p' "$dir/run.log"
	;;
*)
	echo "usage: full.sh BUILD start|collect" >&2
	exit 2
	;;
esac
