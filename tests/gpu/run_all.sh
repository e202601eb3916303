#!/bin/bash
# run_all.sh BUILD SRC - the collector on a real GPU: runs every example under `apx analyze`,
# checks each trace with `apx info` and tests/gpu/check_facts.py, then the agreement check
# with torch.profiler (agree.py), the PM-sampling check (metrics_check.py), kernel replay
# against ncu (replay_check.py) and capture ranges (capture_check.py). Builds nothing. Logs and traces go to $OUT (or a temporary
# folder), bundled as gpu-results.tar.gz. Exit 77 (skipped) without a CUDA GPU and PyTorch.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
out=${OUT:-$(mktemp -d)}
work=$out/work
mkdir -p "$work"
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "skipped: no CUDA GPU with PyTorch here (tests/gpu needs the GPU machine)"
	exit 77
fi
[ -f "$build/libapx-inject.so" ] || { echo "FAIL: $build/libapx-inject.so not built"; exit 1; }
if ldd "$build/libapx-inject.so" | grep -q "not found"; then
	d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
	echo "libcupti not on the RUNPATH; using $d"
	export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cd "$src/examples" || exit 1
run() {	# run NAME APX-ARGS... -- SCRIPT ARGS...
	local name=$1; shift
	local t0=$(date +%s%N)
	"$build/apx" analyze --force -o "$work/$name.apx" "$@" >"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
	printf '%-22s rc=%-3s %6sms  ' "$name" "$(cat "$work/$name.rc")" \
		"$((($(date +%s%N) - t0) / 1000000))"
	"$build/apx" info -q "$work/$name.apx" 2>&1 | head -1
}
for ex in pageable_h2d pinned_h2d sync_every_step sync_fixed launch_bound launch_bound_fixed \
	  copies_serial copies_overlapped uvm_migrations uvm_fixed l2_window l2_window_none \
	  profiler_first fork_and_subprocess nvtx_ranges; do
	run "$ex" "$ex.py"
done
if [ "$(python3 -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then
	run p2p_copy p2p_copy.py	# peer-to-peer copies need two GPUs
fi
run crash_segv crash.py segv
run crash_kill crash.py kill
run cpu_only cpu_only.py
run window --delay 5 --duration 1 steady.py 7
run api_level --level api steady.py 1
# another tool holds CUPTI first: one line naming it, the program runs untouched
if [ -x "$build/cupti-holder" ]; then
	"$build/apx" analyze --force -o "$work/cupti_taken.apx" -- "$build/cupti-holder" \
		>"$work/cupti_taken.out" 2>"$work/cupti_taken.err"
	hrc=$?
	if [ $hrc = 0 ] && grep -q "holder: subscribed first, CUDA ran" "$work/cupti_taken.out" &&
	   [ "$(grep -c "CUPTI is already in use by 'CUPTI for holder-test'" "$work/cupti_taken.err")" = 1 ]; then
		echo "PASS  cupti_taken            holder named once, program untouched"
	else
		echo "FAIL  cupti_taken            rc $hrc"; cat "$work/cupti_taken.err"; holder_failed=1
	fi
fi
for f in sync_fixed pageable_h2d; do	# what the summary looks like
	echo "--- summary of $f:"; grep '^apx:' "$work/$f.err"
done
echo "--- apx info l2_window.apx:"; "$build/apx" info "$work/l2_window.apx"
python3 "$src/tests/gpu/check_facts.py" "$build" "$work" | tee "$out/check_facts.log"
rc=${PIPESTATUS[0]}
python3 "$src/tests/gpu/agree.py" "$build" "$work" 2>&1 | tee "$out/agree.log"
arc=${PIPESTATUS[0]}
python3 "$src/tests/gpu/metrics_check.py" "$build" "$work/metrics" 2>&1 | tee "$out/metrics.log"
mrc=${PIPESTATUS[0]}
python3 "$src/tests/gpu/replay_check.py" "$build" "$work/replay" 2>&1 | tee "$out/replay.log"
[ "${PIPESTATUS[0]}" = 0 ] || mrc=1
# --capture-range=cudaProfilerApi: kernels, edges, the stop's cost, PM sampling between ranges
python3 "$src/tests/gpu/capture_check.py" "$build" "$work/capture" 2>&1 | tee "$out/capture.log"
[ "${PIPESTATUS[0]}" = 0 ] || mrc=1
# the cost per launch measured in the traced process (self_cost.c): no kernel lost or added
python3 "$src/tests/gpu/self_cost_check.py" "$build" "$work/self_cost" 2>&1 | tee "$out/self_cost.log"
[ "${PIPESTATUS[0]}" = 0 ] || mrc=1
# the same with --replay-flush against ncu --cache-control all (all within 5 % on the H200
# since 2026-12-03: a gate)
REPLAY_FLUSH=1 python3 "$src/tests/gpu/replay_check.py" "$build" "$work/replay_flush" 2>&1 |
	tee "$out/replay_flush.log"
[ "${PIPESTATUS[0]}" = 0 ] || mrc=1
tar -czf "$out/gpu-results.tar.gz" -C "$out" work 2>/dev/null && rm -rf "$work"
[ "$rc" = 0 ] && [ "$arc" = 0 ] && [ "$mrc" = 0 ] && [ -z "${holder_failed:-}" ]
