"""ncu_modes.py OUT - how Nsight Compute's own DRAM byte counts depend on how it measures, on
the kernels of replay_workload.py (GEMM, elementwise, reduction, attention, 6 launches each):
ncu with --replay-mode kernel and application, each with --cache-control all and none, the
the counters of apx's one-pass launches (DRAM bytes read and written) and the duration (one pass).
Application replay runs the whole program once per pass and neither saves nor restores device
memory, so it tells which of ncu's DRAM writes are the kernel's and which come from the way a
kernel-replay pass is prepared. Writes OUT/ncu-MODE-CACHE.csv and prints per kernel the
median over its launches in every mode, for tests/fixtures/hwc/flush/known-differences.txt
(issue 13 item 4). Runs on the GPU machine (ncu, torch); about a minute."""
import csv
import glob
import io
import os
import shutil
import statistics
import subprocess
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(here, "replay_workload.py")
ncu = shutil.which("ncu") or (sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) or [None])[-1]
if not ncu:
    sys.exit("ncu_modes.py: ncu not found")
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]
KINDS = (("attention", ("sdpa", "flash", "fmha", "attention")), ("gemm", ("nvjet", "gemm", "xmma", "cutlass")),
         ("reduction", ("reduce_kernel",)), ("elementwise", ("vectorized_elementwise",)),
         ("randn", ("distribution",)))


def kind_of(name):
    low = name.lower()
    return next((k for k, keys in KINDS if any(s in low for s in keys)), None)


vals = {}       # (mode, cache) -> {kind: {metric: [per launch]}}
for mode in ("kernel", "application"):
    for cache in ("all", "none"):
        q = subprocess.run([ncu, "--replay-mode", mode, "--clock-control", "none", "--cache-control",
                            cache, "--csv", "--page", "raw", "--metrics", ",".join(METRICS),
                            sys.executable, work], capture_output=True, text=True)
        open(os.path.join(out, f"ncu-{mode}-{cache}.csv"), "w").write(q.stdout)
        lines = [l for l in q.stdout.splitlines() if l.startswith('"')]
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        print(f"ncu --replay-mode {mode} --cache-control {cache}: exit {q.returncode}, "
              f"{max(0, len(rows) - 2)} launches", flush=True)
        if q.returncode or len(rows) < 3:
            print("  " + ascii(q.stderr[-400:]), flush=True)
            continue
        got = vals.setdefault((mode, cache), {})
        for row in rows[2:]:
            d = dict(zip(rows[0], row))
            k = kind_of(d.get("Kernel Name", ""))
            if not k:
                continue
            for m in METRICS:
                try:
                    got.setdefault(k, {}).setdefault(m, []).append(float(d[m].replace(",", "")))
                except (KeyError, ValueError):
                    pass
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
