"""run.py BUILD [--rounds N] [--reps R] [--budget S] - the collector's overhead benchmark
(issue 3). Modes: no profiler, `apx analyze` level light, light without synchronization
records (light-nosync: prices that kind), level api, and torch.profiler (CPU+CUDA). One
process per mode and round runs workload.py, which times every workload R times; processes
are interleaved (each round runs every mode once, in a rotating order), so all modes see the
same machine state. Prints each process's timings as they come, then one table: median loop
time, ratio to no profiler, and the spread (min..max of the per-repetition ratios)."""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--budget", type=float, default=170.0, help="no new round after S seconds")
ap.add_argument("--modes", default="none,light,light-nosync,api,torch")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
apx = os.path.join(os.path.abspath(args.build), "apx")
tmp = tempfile.mkdtemp(prefix="apx-bench-")
modes = args.modes.split(",")
workloads = ["resnet", "transformer", "launch"]
res = {}        # (workload, mode) -> [seconds], in repetition order
t_start = time.time()


def one(m):
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    cmd = [sys.executable, os.path.join(here, "workload.py"), "--reps", str(args.reps)]
    if m in ("light", "light-nosync", "api"):
        cmd = [apx, "analyze", "-q", "--force", "-o", os.path.join(tmp, f"{m}.apx"),
               "--level", "api" if m == "api" else "light", "--"] + cmd
        if m == "light-nosync":
            env["APX_KINDS"] = "-sync"
    elif m == "torch":
        env["BENCH_TORCH_PROFILER"] = "1"
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    got = 0
    for line in p.stdout.splitlines():
        if line.startswith("BENCH "):
            _, w, _, s = line.split()
            res.setdefault((w, m), []).append(float(s))
            got += 1
    print(f"  {m:13s} {time.time() - t0:6.1f} s process, {got} timings"
          + ("" if p.returncode == 0 else f", rc {p.returncode}: {p.stderr[-500:]}"), flush=True)


def table():
    print("\noverhead: timed training loop vs no profiler (median over all repetitions; spread = "
      "min..max of per-repetition ratios)")
    print(f"{'workload':12s} {'mode':13s} {'reps':>4s} {'loop s':>8s} {'ratio':>7s} {'spread':>15s}")
    for w in workloads:
        base = res.get((w, "none"), [])
        if not base:
            continue
        b = statistics.median(base)
        for m in modes:
            v = res.get((w, m), [])
            if not v:
                print(f"{w:12s} {m:13s} failed")
                continue
            ratios = [x / y for x, y in zip(v, base)]
            print(f"{w:12s} {m:13s} {len(v):4d} {statistics.median(v):8.3f} "
                  f"{statistics.median(v) / b:6.3f}x {min(ratios):6.3f}..{max(ratios):6.3f}")


signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
try:
    for rnd in range(args.rounds):
        if rnd and time.time() - t_start > args.budget:
            print(f"time budget spent after {rnd} rounds", flush=True)
            break
        order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
        print(f"round {rnd + 1}: {' '.join(order)}", flush=True)
        for m in order:
            one(m)
finally:
    table()
