#!/bin/bash
# rules_issue12.sh BUILD - captures tests/gpu/rules_issue12.py in each mode under apx analyze
# and prints the findings of apx report for each (the new rules of issue 12 on real traces);
# traces bundled in $OUT/rules_issue12.tar.gz. Exit 77 without a CUDA GPU and PyTorch.
set -u
build=$(cd "$1" && pwd) src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$(mktemp -d)}
work=$(mktemp -d)
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || exit 77
if ldd "$build/libapx-inject.so" | grep -q "not found"; then
	d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
	export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
for mode in foreach_off foreach_fused zero_grad_keep zero_grad_none graph_recapture graph_once \
	    replica_kept replica_del loader_0 loader_4; do
	"$build/apx" analyze --force -o "$work/$mode.apx" "$src/tests/gpu/rules_issue12.py" "$mode" \
		>"$work/$mode.out" 2>"$work/$mode.err" || { echo "FAIL $mode"; tail -5 "$work/$mode.err"; }
	echo "=== $mode"
	"$build/apx" report --color never -s findings "$work/$mode.apx" 2>&1 | head -40
done
tar -C "$work" -czf "$out/rules_issue12.tar.gz" .
