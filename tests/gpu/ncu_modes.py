"""ncu_modes.py OUT - how Nsight Compute's own DRAM byte counts depend on how it measures, on
the kernels of replay_workload.py (GEMM, elementwise, reduction, attention, 12 launches each):
ncu with --replay-mode kernel and application, each with --cache-control all and none, the
the counters of apx's one-pass launches (DRAM bytes read and written) and the duration (one pass).
Application replay runs the whole program once per pass and neither saves nor restores device
memory, so it tells which of ncu's DRAM writes are the kernel's and which come from the way a
kernel-replay pass is prepared. Writes OUT/ncu-MODE-CACHE.csv and prints per kernel the
median over its launches in every mode, for tests/fixtures/hwc/flush/known-differences.txt.
Runs on the GPU machine (ncu, torch); about a minute."""
import os
import statistics
import sys

import ncu_run

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
ncu = ncu_run.find("ncu_modes.py")
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]

vals = {}       # (mode, cache) -> {kind: {metric: [per launch]}}
for mode in ("kernel", "application"):
    for cache in ("all", "none"):
        rc, rows, err = ncu_run.run(ncu, mode, cache, METRICS,
                                    os.path.join(out, f"ncu-{mode}-{cache}.csv"))
        print(f"ncu --replay-mode {mode} --cache-control {cache}: exit {rc}, {len(rows)} launches",
              flush=True)
        if rc or not rows:
            print("  " + ascii(err[-400:]), flush=True)
            continue
        got = vals.setdefault((mode, cache), {})
        for d in rows:
            k = ncu_run.kind_of(d.get("Kernel Name", ""))
            for m in METRICS:
                v = ncu_run.value(d, m)
                if k and v is not None:
                    got.setdefault(k, {}).setdefault(m, []).append(v)
modes = list(vals)
print("\nmedian over each kernel's launches (read/write MB, duration us), per ncu mode:")
print(f"  {'kernel':11s} {'metric':22s} " + " ".join(f"{m[0][:4]}/{m[1]:4s}".rjust(12) for m in modes))
for k in ("gemm", "elementwise", "reduction", "attention", "randn"):
    for m in METRICS:
        cells = []
        for md in modes:
            xs = vals[md].get(k, {}).get(m, [])
            scale = 1e-6 if "bytes" in m else 1e-3
            cells.append(f"{statistics.median(xs) * scale:12.3f}" if xs else " " * 12)
        if any(c.strip() for c in cells):
            print(f"  {k:11s} {m:22s} " + " ".join(cells))
for md in modes:
    for k in ("gemm", "attention", "reduction"):
        xs = vals[md].get(k, {}).get("dram__bytes_write.sum", [])
        if xs:
            print(f"  {md[0]}/{md[1]} {k} writes per launch (MB): " +
                  " ".join(f"{x / 1e6:.2f}" for x in xs))
