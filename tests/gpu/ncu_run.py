"""ncu_run.py - what the GPU scripts that run Nsight Compute on replay_workload.py share:
finding ncu, running it with --csv --page raw and reading its rows, and naming the workload's
kernels. Imported by ncu_modes.py, l2_counters.py, code_fetch.py, dram_spread.py and
replay_check.py (GPU machine; replay_check.py also offline, for reading a saved CSV)."""
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


def locate():
    """the ncu binary (on PATH, else the newest in Nsight Compute's folder), or None"""
    return shutil.which("ncu") or (sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) or
                                   [None])[-1]


def find(who):
    """the ncu binary, or exit saying who needed it"""
    ncu = locate()
    if not ncu:
        sys.exit(f"{who}: ncu not found")
    return ncu


def rows(text):
    """one dict a launch of ncu's --csv --page raw output (its header and units rows skipped)"""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    got = list(csv.reader(io.StringIO("\n".join(lines))))
    return [dict(zip(got[0], r)) for r in got[2:]] if got else []


def run(ncu, mode, cache, metrics, save, extra=()):
    """ncu --replay-mode mode --cache-control cache (and extra options) on the workload: (exit
    status, one dict a launch, stderr); its CSV is written to save"""
    q = subprocess.run([ncu, "--replay-mode", mode, "--clock-control", "none",
                        "--cache-control", cache, "--csv", "--page", "raw", *extra, "--metrics",
                        ",".join(metrics), sys.executable, WORK], capture_output=True, text=True)
    open(save, "w").write(q.stdout)
    return q.returncode, rows(q.stdout), q.stderr


def value(d, m):
    """a metric of one CSV row as a float, or None"""
    try:
        return float(d[m].replace(",", ""))
    except (KeyError, ValueError):
        return None
