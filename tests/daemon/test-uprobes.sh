#!/bin/bash
# test-uprobes.sh - nvperfd's eBPF uprobes without a GPU: a stand-in libcuda.so.1 built by the
# test (fakecuda.c) is loaded by a Python program (fakecuda.py) that makes driver calls of
# known sizes from pinned and pageable memory; the summary must hold the counts and bytes
# split pinned/pageable, the persisting-L2 limit and the access-policy window as CONFIG
# records, and the findings; while it runs, apx status --json and the table show the bytes so
# far, the persisting-L2 limit and window count, and (uprobe_copy_time = yes) the pageable H2D
# rate, none without copy timing. A second program passes uprobe_max_rate: its probes are
# removed and its summary says so. A summary whose findings are all info suggests no command;
# one with a warning (untimed pageable copies) names `apx attach PID` in the summary, the
# notice and apx report. Exits 77 (skipped) when BPF cannot be used here.
# Needs: APX, NVPERFD, FAKECUDA (the stand-in library), APXKV (record printer).
. "$(dirname "$0")/lib.sh"

write_conf "threshold.min_runtime = 0
threshold.pageable_copy_bytes = 1K
uprobe_max_rate = 200
uprobe_copy_time = yes"
start_daemon
if grep -q "eBPF uprobes not available" "$T/log"; then
	echo "SKIP: $(grep -o 'eBPF uprobes not available.*' "$T/log" | head -n 1)"
	exit 77
fi
grep -q "eBPF uprobes ready" "$T/log" || fail "no uprobe start line"
[ "$(grep -c 'NVML' "$T/log")" = 1 ] || fail "NVML not said exactly once"

# run_fake MODE [TAG]: start fakecuda.py, wait for the probes, let it go; sets P; the
# summary's records go to $T/kv.TAG (default MODE)
run_fake() {
	rm -f "$T/go"; mkfifo "$T/go"
	"$PY" "$(dirname "$0")/fakecuda.py" "$FAKECUDA" "$T/go" "$1" > "$T/fake.out" 2>&1 &
	P=$!
	PIDS="$PIDS $P"
	WAIT_S=8 wait_for grep -q "pid $P: uprobes attached\|uprobes not available" "$T/log"
	if grep -q "eBPF uprobes not available" "$T/log"; then
		echo "SKIP: $(grep -o 'eBPF uprobes not available.*' "$T/log" | head -n 1)"
		exit 77
	fi
	grep -q "pid $P: uprobes attached" "$T/log" ||
		fail "probes not attached to $P: $(grep "pid $P" "$T/log")"
	echo go > "$T/go"
	if [ "$1" = calls ]; then	# live: apx status --json has the bytes so far
		live() { "$APX" status --json | grep -q "\"pid\":$P,.*\"uprobes\":\"attached\",\"h2d_pageable_bytes\":20557,\"h2d_pinned_bytes\":4024,\"gpu_mem_peak_bytes\":null"; }
		WAIT_S=5 wait_for live || fail "apx status: $("$APX" status --json | grep -o "\"pid\":$P,[^}]*")"
		# L2 persistence: the 3 MiB limit and the one window it set; the pageable H2D
		# rate: its 20557 bytes over the time in those calls (timed: call_ns > 0), none
		# without uprobe_copy_time; the idle share not known (no NVML here, or on a GPU
		# machine not on a GPU: no samples)
		J=$("$APX" status --json | grep -o "\"pid\":$P,[^}]*}")
		gs=0
		grep -q "NVML not available" "$T/log" && gs=null
		if [ "${2:-}" = notime ]; then
			ns=null rate=null
		else
			ns=$(echo "$J" | sed -n 's/.*"h2d_pageable_call_ns":\([0-9]*\),.*/\1/p')
			[ -n "$ns" ] && [ "$ns" -gt 0 ] || fail "no pageable H2D call time: $J"
			rate=$("$PY" -c "print('%.0f' % (20557 * 1e9 / $ns))")
		fi
		echo "$J" | grep -q "\"gpu_samples\":$gs,\"gpu_idle_samples\":$gs,\"l2_persist_bytes\":3145728,\"l2_windows\":1,\"h2d_pageable_call_ns\":$ns,\"cpu_pct\":[0-9.]*,\"gpu_idle_pct\":null,\"h2d_pageable_bytes_per_s\":$rate}$" ||
			fail "apx status: L2 and rate of $P (call_ns $ns, rate $rate): $J"
		# the table: 24581 bytes host to device, 84 % of them pageable; L2 3M/1w; GPU,
		# GMEM, SM% and IDLE% "-" (not known), not 0: no NVML here, and on a GPU machine
		# the stand-in libcuda puts the process on no GPU
		COLUMNS=200 "$APX" status > "$T/table" || fail "apx status"
		grep -q "^ *$P root .* yes   -     -    -     -    24K 84%pg    3M/1w python3 .*fakecuda.py" "$T/table" ||
			fail "apx status table: $(cat "$T/table")"
		awk 'length > 200 { exit 1 }' "$T/table" || fail "wider than 200: $(cat "$T/table")"
		echo go > "$T/go"
	fi
	wait "$P" || fail "fakecuda.py $1 failed: $(cat "$T/fake.out")"
	WAIT_S=5 wait_for count_files "$T/state/0" "*-$P-*.apx" 1 || fail "no summary for $P"
	"$APXKV" "$T"/state/0/*-"$P"-*.apx > "$T/kv.${2:-$1}" || fail "apxkv $P"
}

kv() { grep -qx "kv $1" "$T/kv.$M" || fail "$M: expected 'kv $1'; got:
$(grep "^kv nvperfd\.\(h2d\|d2h\|pinned\|uprobes\)" "$T/kv.$M")"; }

M=calls
run_fake calls
kv "nvperfd.uprobes=attached"
kv "nvperfd.uprobes.libcuda=$FAKECUDA"
kv "nvperfd.h2d.pinned.calls=5"
kv "nvperfd.h2d.pinned.bytes=4024"
kv "nvperfd.h2d.pageable.calls=6"
kv "nvperfd.h2d.pageable.bytes=20557"
kv "nvperfd.d2h.pageable.calls=2"
kv "nvperfd.d2h.pageable.bytes=16384"
kv "nvperfd.d2h.pinned.calls=4"
kv "nvperfd.d2h.pinned.bytes=400"
kv "nvperfd.pinned.calls=3"
kv "nvperfd.pinned.bytes=$(( (1 << 20) + (64 << 10) + (256 << 10) ))"
kv "nvperfd.uprobes.lost=0"
if grep -q "NVML not available" "$T/log"; then	# CI: no driver
	kv "nvperfd.nvml=unavailable: $(grep -o 'NVML not available: [^;]*' "$T/log" | cut -d' ' -f4-)"
else	# on a GPU machine the real NVML answers, and the stand-in libcuda uses no GPU
	kv "nvperfd.nvml=process not seen on a GPU"
fi
[ "$(grep -c '^config ' "$T/kv.calls")" = 2 ] || fail "expected 2 CONFIG records: $(cat "$T/kv.calls")"
grep -q "^config kind=1 value=3145728 " "$T/kv.calls" || fail "L2 limit record: $(grep ^config "$T/kv.calls")"
grep -q "^config kind=3 value=0 base=0x[0-9a-f]* bytes=65536 hit_ppm=600000 hit=2 miss=1 stream=0x1234$" \
	"$T/kv.calls" || fail "window record: $(grep ^config "$T/kv.calls")"
# timed copies: pageable-copy estimates its saving as apx report does (the calls' time minus
# the bytes at the pinned rate, here the 12 GB/s floor: 4 KiB pinned copies are too small to
# tell), microseconds, under 2 % of the run: severity 1 (info), the report's for that share
grep -q "^finding pageable-copy 1 36.1 KiB copied between host and pageable memory in 8 calls (.* GB/s in the calls; threshold 1.0 KiB)$" \
	"$T/kv.calls" || fail "no pageable-copy finding: $(grep ^finding "$T/kv.calls")"
grep -q "^finding l2-persistence 1 L2 persistence in use: set-aside 3.0 MiB, 1 access-policy windows (1 persisting)" \
	"$T/kv.calls" || fail "no l2-persistence finding: $(grep ^finding "$T/kv.calls")"
# findings of severity 1 only: no big problem, no command suggested
kv "nvperfd.cuda=yes"
grep -q "^kv nvperfd.next=" "$T/kv.calls" &&
	fail "calls: a command suggested: $(grep next "$T/kv.calls")"
grep "notice: pid $P " "$T/log" | grep -q "next:" && fail "calls: notice suggests a command"
"$APX" report --color never "$T"/state/0/*-"$P"-*.apx 2>/dev/null | grep -qi "pageable" ||
	fail "apx report does not show the pageable-copy finding"

# the rate cap: 20000 copies as fast as Python goes, cap 200/s
M=storm
run_fake storm
grep -q "^kv nvperfd.uprobes=detached: [0-9]* calls within 1 s, over uprobe_max_rate 200$" "$T/kv.storm" ||
	fail "storm: not detached: $(grep uprobes "$T/kv.storm")"
n=$(sed -n 's/^kv nvperfd.h2d.pageable.calls=//p' "$T/kv.storm")
[ -n "$n" ] && [ "$n" -le 200 ] && [ "$n" -ge 1 ] || fail "storm: $n copies counted (expected 1..200)"
grep -q "pid $P: [0-9]* probed libcuda calls within 1 s, over uprobe_max_rate (200/s): its uprobes are removed" \
	"$T/log" || fail "storm: no detach log line"
grep -q "^finding uprobe-rate 1 " "$T/kv.storm" || fail "storm: no uprobe-rate finding"

# without copy timing (the default: no return probes on copies): same counts, no rate
M=notime
echo "uprobe_copy_time = no" > "$T/user-0.conf"
WAIT_S=3 wait_for grep -q "config of uid 0 re-read\|tracking" "$T/log"
sleep 0.3
run_fake calls notime
grep -q "pid $P: uprobes attached .*copies not timed" "$T/log" || fail "notime: copies timed"
kv "nvperfd.h2d.pageable.bytes=20557"
kv "nvperfd.h2d.pinned.bytes=4024"
kv "nvperfd.d2h.pageable.bytes=16384"
kv "nvperfd.h2d.pageable.call_ns=n/a (uprobe_copy_time = no)"
# untimed: no saving can be estimated, and the rule says warning (2)
grep -q "^finding pageable-copy 2 36.1 KiB .* in 8 calls (rate n/a: uprobe_copy_time = no; threshold 1.0 KiB)$" \
	"$T/kv.notime" || fail "notime: finding $(grep ^finding "$T/kv.notime")"
# a warning is a big problem: the summary and the notice name the command that looks closer
# (the process used CUDA: the collector, into its pid)
NEXT="apx attach $P --duration 10 -o attach-$P.apx"
kv "nvperfd.next=$NEXT"
grep -q "notice: pid $P uid 0 \"python3\": 36.1 KiB .*; next: $NEXT$" "$T/log" ||
	fail "notime: notice without the command: $(grep "notice: pid $P " "$T/log")"
"$APX" report --color never "$T"/state/0/*-"$P"-*.apx 2>/dev/null | grep -q "^    next  *$NEXT$" ||
	fail "notime: apx report does not show the command"
stop_daemon
echo "ok"
