"""run.py BUILD OUT [--reps R] [--cases a,b] - the issue 12 suite on the GPU machine: for every
case of programs.py, R interleaved runs of the planted and the fixed variant without a
profiler (their median step times are the measurement), then one run of each under
`apx analyze` (the trace the analysis is tested on); the three clean models likewise. Writes
OUT/<case>_<variant>.apx and OUT/facts.json (step times, their difference, the rule each case
plants, the steps the traced runs ran), the input of tests/integration/suite-check.py once
copied to tests/fixtures/suite/. About 12 minutes with R = 2: run it detached
(setsid ... &) and collect it over two device calls, like bench/overhead/full.sh."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("out")
ap.add_argument("--reps", type=int, default=2)
ap.add_argument("--cases", default="")
a = ap.parse_args()
from programs import CASES  # noqa: E402  (the suite's table)

apx = os.path.join(os.path.abspath(a.build), "apx")
os.makedirs(a.out, exist_ok=True)
prog = os.path.join(here, "programs.py")
cases = [c for c in CASES if not a.cases or c in a.cases.split(",")]
clean = [c for c in ("resnet", "gpt", "hf") if not a.cases or c in a.cases.split(",")]


def plain(case, variant):
    p = subprocess.run([sys.executable, prog, case, variant], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("SUITE "):
            return float(line.split()[3])
    print(f"  {case} {variant}: FAILED {p.stderr[-300:]}", flush=True)
    return None


def traced(case, variant):
    t = os.path.join(a.out, f"{case}_{variant}.apx")
    p = subprocess.run([apx, "analyze", "-q", "--force", "-o", t, "--", sys.executable, prog, case,
                        variant], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("SUITE "):
            return int(line.split()[4]), float(line.split()[3])
    print(f"  {case} {variant} traced: FAILED rc {p.returncode} {p.stderr[-300:]}", flush=True)
    return None, None


facts = {}
t0 = time.time()
for case in cases + clean:
    variants = ["clean"] if case in clean else ["planted", "fixed"]
    runs = {v: [] for v in variants}
    for r in range(a.reps):
        for v in (variants if r % 2 == 0 else variants[::-1]):
            ms = plain(case, v)
            if ms is not None:
                runs[v].append(ms)
    f = {"rule": CASES.get(case), "runs_ms": runs}
    for v in variants:
        steps, ms = traced(case, v)
        f[f"{v}_traced_steps"] = steps
        f[f"{v}_traced_ms"] = ms
        if runs[v]:
            f[f"{v}_ms"] = statistics.median(runs[v])
    if "planted_ms" in f and "fixed_ms" in f:
        f["diff_ms"] = f["planted_ms"] - f["fixed_ms"]
    facts[case] = f
    print(f"{time.time() - t0:6.0f} s  {case:16s} " + "  ".join(
        f"{v} {f.get(v + '_ms', float('nan')):8.3f} ms" for v in variants) +
        (f"  diff {f['diff_ms']:.3f} ms" if "diff_ms" in f else ""), flush=True)
    with open(os.path.join(a.out, "facts.json"), "w") as fh:
        json.dump(facts, fh, indent=1, sort_keys=True)
print("done", flush=True)
