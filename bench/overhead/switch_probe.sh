#!/bin/bash
# switch_probe.sh BUILD - what a capture range's cudaProfilerStop costs the program with each
# activity kind left out (APX_KINDS) and under the floor: runs tests/gpu/capture_workload.py
# (its tanh phase starts right after the stop) and prints the stop's time (tanh start - cos
# end) and the collector's kv capture_switch_max (the longest switch of each kind).
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
wl=$here/../../tests/gpu/capture_workload.py
out=${OUT:-$(mktemp -d)}
gap() { python3 -c 'import sys
p={l.split()[1]:(int(l.split()[2]),int(l.split()[3])) for l in sys.stdin if l.startswith("PHASE")}
print("stop %.1f ms" % ((p["tanh"][0]-p["cos"][1])/1e6) if len(p)==4 else "no phases")'; }
for k in "" -uvm -memory -p2p -memcpy -memset "-uvm,-memory"; do
	APX_KINDS=$k "$build/apx" analyze -q -f -o "$out/probe.apx" --capture-range=cudaProfilerApi \
		-- python3 "$wl" 300 >"$out/probe.out" 2>&1
	printf '%-14s %s  %s\n' "kinds${k:- all}" "$(gap <"$out/probe.out")" \
		"$("$build/apx-dump" "$out/probe.apx" | grep -o '"capture_switch_max","value":"[^"]*"')"
done
for fk in kernel,memcpy,memset kernel,memcpy,p2p,memset,memory,device; do
	APX_FLOOR_CAPTURE=1 APX_FLOOR_KINDS=$fk CUDA_INJECTION64_PATH=$build/libapx-floor.so \
		python3 "$wl" 300 >"$out/probe.out" 2>&1
	printf '%-14s %s\n' "floor $fk" "$(gap <"$out/probe.out")"
done
