"""check.py BUILD [--cases a,b] [--runs N] [--steps S] [--reps R] [--pairs P] [--out DIR]
[--deadline S] -
apx tune against the hand-fixed variants, on one machine in one run (label gpu; exit 77
without a GPU). Issue 35's check: each automatic fix's measured saving agrees with the
hand-fixed variant's within the noise, and apx diff of the two variants' traces reports it.

For the development suite's cases that have a fix apx tune applies (tests/gpu/suite/
programs.py; default all six):
  1. the hand-fixed saving: tests/gpu/suite/run.sh BUILD cases LIST (R processes of P
     in-process pairs of planted and fixed blocks, or separate processes for a case that
     cannot be paired), with its traced run of each variant; the interval is a bootstrap 95 %
     one over the pairs (paired) or over the processes (separate);
  2. `apx tune --runs N --fix F -- python3 programs.py CASE planted --steps S`: the estimate,
     the measured saving and its interval;
  3. `apx diff` of the two traced variants: the change a step and its interval.
A case agrees when the hand-fixed interval and apx tune's overlap. --deadline S: each case's
apx tune gets SIGINT in time for all to end within S seconds of the start (a device call's
limit); a tune cut so measures its fix on the runs it completed (the row says "3+4 runs").
Prints a table last; exit 1
when a case does not agree or a run failed. Files under --out (default $OUT or a temp folder):
the suite part's tarball, each tune's work folder and output."""
import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "suite")
FIX = {"fp32_matmul": "tf32", "empty_cache": "no_empty_cache", "foreach": "foreach",
       "zero_grad": "set_to_none", "loader": "workers", "loader_pinned": "pin_memory"}
# Steps a tune run where 30 measure only a young process: the loader's planted main thread
# loads and pins every batch, and its 30-step runs were unsteady (p95 1.9-2.7x the median,
# 6.0 ms measured against the settled program's 0.99 ms, docs/tune.md)
STEPS = {"loader": 120}
STOPPED = re.compile(r"stopped\s+interrupted after (\d+) of \d+ runs without and (\d+) of")
SAVING = re.compile(r"saving\s+estimated ([-0-9.]+) ms a step; measured ([-0-9.]+) ms, 95% "
                    r"interval \[([-0-9.]+) ms, ([-0-9.]+) ms\]")


def boot(values, stat, n=2000):
    """stat(values) and its bootstrap 95 % interval (fixed seed)."""
    rnd = random.Random(1)
    r = sorted(stat(rnd.choices(values, k=len(values))) for _ in range(n))
    return stat(values), r[int(0.025 * n)], r[int(0.975 * n)]


def hand_fixed(fact):
    """The hand-fixed variant's saving a step (ms): (value, low, high, how)."""
    if fact.get("method") == "paired" and fact.get("paired_diffs_ms"):
        d = fact["paired_diffs_ms"]
        v = boot(d, statistics.median)
        return (*v, f"{len(d)} pairs, {min(d):.3f}-{max(d):.3f}")
    runs = fact.get("runs_ms", {})
    p, f = runs.get("planted", []), runs.get("fixed", [])
    if not p or not f:
        return None
    rnd = random.Random(1)
    r = sorted(statistics.median(rnd.choices(p, k=len(p))) -
               statistics.median(rnd.choices(f, k=len(f))) for _ in range(2000))
    return (statistics.median(p) - statistics.median(f), r[int(0.025 * 2000)],
            r[int(0.975 * 2000)],
            f"{len(p)}+{len(f)} processes")


def tune(build, case, a, limit=None):
    """apx tune's estimate, measured saving and interval for CASE: (est, meas, lo, hi, cut),
    or None. After LIMIT seconds apx tune gets SIGINT (Ctrl-C): it measures the fix on the
    runs done, 2 a side at least, and says how many (cut: "3+4 runs"; "" when not cut)."""
    work = os.path.join(a.out, f"tune-{case}")
    cmd = [os.path.join(build, "apx"), "tune", "--runs", str(a.runs), "--fix", FIX[case],
           "--dir", work, "--", sys.executable, os.path.join(SUITE, "programs.py"), case,
           "planted", "--steps", str(a.steps or STEPS.get(case, 30))]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
    with open(os.path.join(a.out, f"tune-{case}.txt"), "w") as fh:
        fh.write(out + err)
    m = SAVING.search(out)
    if p.returncode not in (0, 130) or not m:
        return None
    est, meas, lo, hi = (float(x) for x in m.groups())
    cut = STOPPED.search(out)
    return est, meas, lo, hi, f"{cut.group(1)}+{cut.group(2)} runs" if cut else ""


def diff(build, folder, case):
    b, f = (os.path.join(folder, f"{case}_{v}.apx") for v in ("planted", "fixed"))
    if not (os.path.exists(b) and os.path.exists(f)):
        return None
    r = subprocess.run([os.path.join(build, "apx"), "diff", "--format", "json", b, f],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    st = json.loads(r.stdout)["step_time"]
    lo, hi = st["change_ci95_ns"]
    return st["change_ns"] / 1e6, lo / 1e6, hi / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--cases", default=",".join(FIX))
    ap.add_argument("--runs", type=int, default=3, help="apx tune's runs a side")
    ap.add_argument("--steps", type=int, default=0,
                    help="programs.py --steps a run (default 30; the loader 120)")
    ap.add_argument("--reps", type=int, default=2, help="suite processes a case")
    ap.add_argument("--pairs", type=int, default=4, help="in-process pairs a suite process")
    ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    ap.add_argument("--deadline", type=float, default=0, metavar="S",
                    help="end each case's apx tune with SIGINT so that all finish within S "
                         "seconds of the start; a cut tune is measured on its runs done")
    a = ap.parse_args()
    t_start = time.monotonic()
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        print("skipped: no CUDA GPU with PyTorch here (tests/gpu/tune needs the GPU machine)")
        return 77
    cases = [c for c in a.cases.split(",") if c]
    bad = [c for c in cases if c not in FIX]
    if bad:
        print(f"check.py: no apx tune fix for {', '.join(bad)} (cases: {', '.join(FIX)})")
        return 2
    build = os.path.abspath(a.build)
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, OUT=a.out)
    subprocess.run(["bash", os.path.join(SUITE, "run.sh"), build, "cases", ",".join(cases),
                    "tune", "--reps", str(a.reps), "--pairs", str(a.pairs)], env=env,
                   check=False)
    suite = os.path.join(a.out, "suite")
    os.makedirs(suite, exist_ok=True)
    facts = {}
    part = os.path.join(a.out, "suite-part-tune.tgz")
    if os.path.exists(part):
        with tarfile.open(part) as tf:
            for m in tf.getmembers():
                name = os.path.basename(m.name)
                if m.isfile() and (name.endswith(".apx") or name == "facts.json"):
                    with open(os.path.join(suite, name), "wb") as fh:
                        fh.write(tf.extractfile(m).read())
        facts = json.load(open(os.path.join(suite, "facts.json")))
    rows, ok = [], True
    for k, case in enumerate(cases):
        h = hand_fixed(facts.get(case, {}))
        limit = None
        if a.deadline:          # the time left, shared by the cases left (30 s each kept back)
            left = a.deadline - (time.monotonic() - t_start) - 30 * (len(cases) - k)
            limit = max(30.0, left / (len(cases) - k))
        t = tune(build, case, a, limit)
        d = diff(build, suite, case)
        agree = bool(h and t and h[1] <= t[3] and t[2] <= h[2])
        ok &= agree
        rows.append((case, FIX[case], f"{t[0]:.3f}" if t else "-",
                     f"{t[1]:.3f} [{t[2]:.3f}, {t[3]:.3f}]" + (f" ({t[4]})" if t[4] else "")
                     if t else "failed",
                     f"{h[0]:.3f} [{h[1]:.3f}, {h[2]:.3f}] ({h[3]})" if h else "not measured",
                     f"{d[0]:.3f} [{d[1]:.3f}, {d[2]:.3f}]" if d else "-",
                     "agrees" if agree else "DIFFERS"))
        print("row: " + " | ".join(rows[-1]), flush=True)
    print(f"{'case':14} {'fix':15} {'est. ms':>8}  {'apx tune: measured [95 %]':28} "
          f"{'hand-fixed [95 %] (spread)':48} {'apx diff [95 %]':28} result")
    for r in rows:
        print(f"{r[0]:14} {r[1]:15} {r[2]:>8}  {r[3]:28} {r[4]:48} {r[5]:28} {r[6]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
