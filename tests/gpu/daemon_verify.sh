#!/bin/bash
# daemon_verify.sh BUILD SRC [REPS] - nvperfd on a real GPU (issue "nvperfd, part 2"): starts the
# daemon, runs the training program tests/gpu/daemon_train.py from pageable and from pinned
# memory (the pinned run also sets an L2 access-policy window), samples `apx status --json`
# meanwhile, then runs the same program under `apx analyze` (CUPTI) for the reference bytes,
# then times it with and without nvperfd, started and stopped under one run, REPS (default 5)
# times each, and the cost of one probed call (tests/gpu/probe_cost.py, mode "calls"). PHASES
# ("track reference overhead") and OVERHEAD_MODES ("calls pageable-cached pinned"; also
# "pageable", see step 3) choose parts; OVERHEAD_BIND prefixes the timed program (e.g.
# "taskset -c 2-7"); TRAIN_ARGS are added to the timed training program's arguments (e.g.
# "--rows 512"; tests/gpu/step_drift.py tells how steady a program is on its own).
# tests/gpu/daemon_check.py compares it all. Needs root; builds nothing. Everything goes to
# $OUT/daemon (or a temporary folder). Exit 77 (skipped) without a CUDA GPU and PyTorch.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) reps=${3:-5}
out=${OUT:-$(mktemp -d)}/daemon
mkdir -p "$out"
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "skipped: no CUDA GPU with PyTorch here (tests/gpu needs the GPU machine)"
	exit 77
fi
APX=$build/apx NVPERFD=$build/nvperfd KV=$build/tests/daemon/apx-test-apxkv
TRAIN=$src/tests/gpu/daemon_train.py
# the daemon tests' helpers: scratch folder $T with config, state, log and socket; start and
# stop; cleanup on exit. The daemon samples at its default period (1 s).
. "$src/tests/daemon/lib.sh"
trap 'cp -r "$T"/. "$out"/ 2>/dev/null; cleanup' EXIT
PORT=9464	# the Prometheus endpoint, during the tracking runs only
SAMPLE_PERIOD=1 write_conf "threshold.min_runtime = 0
metrics_listen = 127.0.0.1:$PORT"
{
	echo "kernel $(uname -r)"
	ls -l /sys/kernel/btf/vmlinux 2>&1
	echo "event sources: $(ls /sys/bus/event_source/devices/ | tr '\n' ' ')"
	nvidia-smi -L
	ldd "$NVPERFD"
} > "$T/env.txt" 2>&1
scrape() { python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:$PORT/metrics', timeout=2).read().decode())"; }
sample_status() {	# sample_status NAME: every 0.25 s until killed, side by side: `apx status`
	# (JSON and table), the Prometheus endpoint, and nvidia-smi (the independent reading)
	while :; do
		"$APX" status --json >> "$out/status.$1.jsonl" 2>/dev/null; echo >> "$out/status.$1.jsonl"
		COLUMNS=120 "$APX" status >> "$out/status.$1.txt" 2>&1
		{ echo "# scrape $(date +%s.%N)"; scrape; } >> "$out/metrics.$1.txt" 2>&1
		{ echo "# smi $(date +%s.%N)"
		  nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,power.draw \
			--format=csv,noheader,nounits
		  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
		} >> "$out/smi.$1.txt" 2>&1
		sleep 0.25
	done
}

phases=${PHASES:-track reference overhead}	# what to run (all by default)
want() { case " $phases " in *" $1 "*) return 0;; esac; return 1; }

# 1. tracking: pageable, then pinned with an L2 window
if want track; then
start_daemon
for run in pageable "pinned --window"; do
	name=${run%% *}
	sample_status "$name" & sp=$!
	python3 "$TRAIN" $run 300 > "$out/track.$name.out" 2>&1 & pid=$!
	wait $pid; echo $? > "$out/track.$name.rc"
	kill $sp; wait $sp 2>/dev/null
	echo "$pid" > "$out/track.$name.pid"
	for _ in $(seq 100); do ls "$T"/state/0/*-"$pid"-*.apx >/dev/null 2>&1 && break; sleep 0.1; done
	f=$(ls "$T"/state/0/*-"$pid"-*.apx 2>/dev/null | head -n 1)
	[ -n "$f" ] || { echo "FAIL: no summary for $name (pid $pid)"; continue; }
	cp "$f" "$out/summary.$name.apx"
	"$KV" "$f" > "$out/kv.$name" 2>&1
	"$APX" report --color never "$f" > "$out/report.$name.txt" 2>&1
done
stop_daemon
fi

SAMPLE_PERIOD=1 write_conf "threshold.min_runtime = 0"	# the defaults again: no endpoint

# 2. the reference: the same program under the CUPTI collector
if want reference; then
d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -n 1)")
for mode in pageable pinned; do
	LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$APX" analyze --force \
		-o "$out/cupti.$mode.apx" python3 "$TRAIN" $mode 300 > "$out/cupti.$mode.out" 2>&1
	"$APX" report --format json "$out/cupti.$mode.apx" > "$out/cupti.$mode.json" 2>/dev/null
done
fi

# 3. step time with and without nvperfd, for each of OVERHEAD_MODES: one long run of the
# program (two runs of it differ more than the effect), nvperfd started and stopped under it
# REPS times (3 s each way); each 20-step block is labelled by what ran meanwhile. The
# toggles file has the time each start and stop began and ended. Modes: "pinned" and
# "pageable" are the tracked programs above; "pageable-cached" copies a 4 MiB batch from
# pageable memory each step (it stays in the CPU's cache: the 64 MiB copies of "pageable" run
# at a host memcpy rate that switches by about 20 % every few seconds, on its own, which hides
# 1 %); "calls" times one probed call (tests/gpu/probe_cost.py).
if want overhead; then
for mode in ${OVERHEAD_MODES:-calls pageable-cached pinned}; do
	: > "$out/toggles.$mode.txt"
	case $mode in
	calls) prog=("$src/tests/gpu/probe_cost.py" 400);;
	pageable-cached) prog=("$TRAIN" pageable 1000000 --rows 16384 --in 64 --batches 1);;
	*) prog=("$TRAIN" "$mode" 1000000);;
	esac
	# shellcheck disable=SC2206	# TRAIN_ARGS is a word list
	[ "$mode" = calls ] || prog+=(${TRAIN_ARGS:-})
	# shellcheck disable=SC2086	# so is OVERHEAD_BIND
	${OVERHEAD_BIND:-} python3 "${prog[@]}" --blocks "$out/blocks.$mode.txt" \
		> "$out/overhead.$mode.out" 2>&1 & tp=$!
	sleep 8	# start-up and warm-up: CUDA context, cuBLAS, the first blocks
	for _ in $(seq "$reps"); do
		echo "on_begin $(date +%s.%N)" >> "$out/toggles.$mode.txt"; start_daemon
		echo "on $(date +%s.%N)" >> "$out/toggles.$mode.txt"; sleep 3
		echo "off_begin $(date +%s.%N)" >> "$out/toggles.$mode.txt"; stop_daemon
		echo "off $(date +%s.%N)" >> "$out/toggles.$mode.txt"; sleep 3
	done
	echo "end $(date +%s.%N)" >> "$out/toggles.$mode.txt"
	kill $tp; wait $tp 2>/dev/null
done
fi
cp "$T/log" "$out/nvperfd.log" 2>/dev/null
python3 "$src/tests/gpu/daemon_check.py" "$out"
