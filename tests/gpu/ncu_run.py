"""ncu_run.py - what the GPU scripts that run Nsight Compute on replay_workload.py share:
finding ncu, running it with --csv --page raw and reading its rows, and naming the workload's
kernels. Imported by ncu_modes.py and l2_counters.py (GPU machine)."""
import csv
import glob
import io
import os
import shutil
import subprocess
import sys

WORK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay_workload.py")
KINDS = (("attention", ("sdpa", "flash", "fmha", "attention")),
         ("gemm", ("nvjet", "gemm", "xmma", "cutlass")), ("reduction", ("reduce_kernel",)),
         ("elementwise", ("vectorized_elementwise",)), ("randn", ("distribution",)))


def kind_of(name):
    low = name.lower()
    return next((k for k, keys in KINDS if any(s in low for s in keys)), None)


def find(who):
    """the ncu binary, or exit saying who needed it"""
    ncu = shutil.which("ncu") or (sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) or
                                  [None])[-1]
    if not ncu:
        sys.exit(f"{who}: ncu not found")
    return ncu


def run(ncu, mode, cache, metrics, save):
    """ncu --replay-mode mode --cache-control cache on the workload: (exit status, one dict a
    launch, stderr); its CSV is written to save"""
    q = subprocess.run([ncu, "--replay-mode", mode, "--clock-control", "none",
                        "--cache-control", cache, "--csv", "--page", "raw", "--metrics",
                        ",".join(metrics), sys.executable, WORK], capture_output=True, text=True)
    open(save, "w").write(q.stdout)
    lines = [l for l in q.stdout.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    return q.returncode, [dict(zip(rows[0], r)) for r in rows[2:]], q.stderr


def value(d, m):
    """a metric of one CSV row as a float, or None"""
    try:
        return float(d[m].replace(",", ""))
    except (KeyError, ValueError):
        return None
