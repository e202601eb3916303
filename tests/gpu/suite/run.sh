#!/bin/bash
# run.sh BUILD start|collect - tests/gpu/suite/run.py on the GPU machine, detached
# (scripts/detached.sh) so that it spans device calls (about 12 minutes): `start` launches it
# logging to /tmp/apx-suite/; `collect` waits up to 9 minutes (call it again while it says
# "running"), then copies the traces and facts.json to $OUT/suite (commit them as
# tests/fixtures/suite/).
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
