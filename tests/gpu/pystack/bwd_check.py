"""bwd_check.py APX OUT [--pairs N] - backward attribution's truth and cost check on the GPU machine
(by hand from the repository root; exit 77 without an NVIDIA GPU and PyTorch with CUDA):

    python3 tests/gpu/pystack/bwd_check.py build/apx "$OUT/bwd" --pairs 5

Runs bwd_attr.py (a bf16 GPT training loop) under `apx analyze --python-backward nvtx` and
`apx analyze --python-backward none`, interleaved (none, nvtx, nvtx, none, ... --pairs of each),
and checks:

  coverage   the report's hotspots "backward" object of the first nvtx run:
             attributed_ns / nostack_ns (coverage_pct) >= --min-coverage (90 %): the GPU time
             of kernels launched without a Python stack (the backward pass) given a forward
             line of bwd_attr.py;
  lines      every line marked `# APX-EXPECT: fwd` in bwd_attr.py has backward GPU time
             (hotspots[].gpu_bwd_ns > 0);
  cost       the step time ratio nvtx / none: each pair's ratio of the program's STEP_MS
             (median over its steps); the median of the pairs' ratios and a ~95 % interval
             (order statistics of the ratios: with 5 pairs their min..max, 94 %); reported,
             and PASS when the median is <= --max-ratio (default 1.10, to be set from the
             first measurement).

Writes into OUT: bwd_attr.apx (the first nvtx run's trace), bwd_attr.json / .txt (its report),
and one log per run. With --from DIR (no GPU needed; ctest pystack-bwd-fixture on
tests/fixtures/pystack/h100-bwd) it checks coverage and lines again on DIR/bwd_attr.apx, the
report made anew by this apx, and writes its report into OUT. Prints one table (check, expected, got, result) last; exit 1 on any FAIL."""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "bwd_attr.py")

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("apx")
ap.add_argument("out")
ap.add_argument("--from", dest="src", metavar="DIR", help="check DIR/bwd_attr.apx again")
ap.add_argument("--pairs", type=int, default=5)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--min-coverage", type=float, default=90.0)
ap.add_argument("--max-ratio", type=float, default=1.10)
ap.add_argument("--timeout", type=float, default=300)
args = ap.parse_args()
apx = os.path.abspath(args.apx)
rows = []


def row(check, expected, got, ok):
    rows.append((check, expected, got, "PASS" if ok else "FAIL"))


def gpu_here():
    if not shutil.which("nvidia-smi"):
        return "nvidia-smi not found"
    p = subprocess.run([sys.executable, "-c", "import sys, torch; "
                        "sys.exit(0 if torch.cuda.is_available() else 1)"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else "PyTorch without CUDA in " + sys.executable


def run(mode, trace, log):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "NVTX_INJECTION64_PATH")}
    cmd = [apx, "analyze", "-q", "-f", "-o", trace, "--python-backward", mode,
           "--python", sys.executable, PROG, "--steps", str(args.steps)]
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    text = p.stdout + p.stderr
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + text +
                f"\n--- exit status {p.returncode}, {time.time() - t0:.1f} s\n")
    got = re.findall(r"^STEP_MS ([0-9.]+)", p.stdout, re.M)
    return p.returncode, float(got[-1]) if got else None


def marked_lines():
    with open(PROG) as f:
        return [i + 1 for i, line in enumerate(f) if line.rstrip().endswith("# APX-EXPECT: fwd")]


def main():
    why = None if args.src else gpu_here()
    if why:
        print("skipped:", why)
        return 77
    os.makedirs(args.out, exist_ok=True)
    first = os.path.join(args.src or args.out, "bwd_attr.apx")
    scratch = os.path.join(args.out, "scratch.apx")
    step = {"none": [], "nvtx": []}
    order = []
    for i in range(0 if args.src else args.pairs):
        order += ["none", "nvtx"] if i % 2 == 0 else ["nvtx", "none"]
    for n, mode in enumerate(order):
        trace = first if mode == "nvtx" and not step["nvtx"] else scratch
        rc, ms = run(mode, trace, os.path.join(args.out, f"run{n:02d}.{mode}.log"))
        print(f"run {n}: --python-backward {mode}: exit {rc}, STEP_MS {ms}", flush=True)
        if rc != 0 or ms is None:
            row(f"run {n} ({mode})", "exit 0, STEP_MS", f"exit {rc}", False)
            continue
        step[mode].append(ms)
        if trace == scratch:
            for p in [scratch] + [scratch + "." + x for x in os.listdir(args.out)
                                  if x.startswith("scratch.apx.")]:
                if os.path.exists(p):
                    os.unlink(p)
    doc = {}
    if os.path.exists(first):
        p = subprocess.run([apx, "report", "--format", "json", "--top", "1000", first],
                           capture_output=True, text=True)
        open(os.path.join(args.out, "bwd_attr.json"), "w").write(p.stdout)
        t = subprocess.run([apx, "report", first], capture_output=True, text=True)
        open(os.path.join(args.out, "bwd_attr.txt"), "w").write(t.stdout)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
    hs = doc.get("hotspots", [])
    bwd = doc.get("backward") or {}
    cov = bwd.get("coverage_pct")
    row("coverage", f">= {args.min_coverage:.0f} % of stackless GPU time",
        "n/a" if cov is None else "%.1f %% (%.2f of %.2f ms; nearest %.2f ms; no forward "
        "%.2f ms; %s op ranges)" % (cov, bwd.get("attributed_ns", 0) / 1e6,
                                    bwd.get("nostack_ns", 0) / 1e6,
                                    bwd.get("nearest_ns", 0) / 1e6,
                                    bwd.get("no_forward_ns", 0) / 1e6,
                                    bwd.get("torch_ranges")),
        cov is not None and cov >= args.min_coverage)
    for line in marked_lines():
        h = [x for x in hs if x.get("file", "").endswith("bwd_attr.py") and x.get("line") == line]
        got = h[0].get("gpu_bwd_ns", 0) if h else 0
        row(f"bwd_attr.py:{line}", "gpu_bwd_ns > 0", "%.2f ms" % (got / 1e6), got > 0)
    r = [b / a for a, b in zip(step["none"], step["nvtx"])]
    if r:
        r.sort()
        med = statistics.median(r)
        # order-statistic interval for the median: ranks k..n-k+1 (binomial, >= ~94 %)
        n, k = len(r), 1
        while k + 1 <= n // 2 and sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n < 0.025:
            k += 1
        lo, hi = r[k - 1], r[n - k]
        row("cost nvtx/none", f"median <= {args.max_ratio:.2f}",
            f"{med:.3f}x [{lo:.3f}, {hi:.3f}] over {n} pairs (none {statistics.median(step['none']):.2f} "
            f"ms, nvtx {statistics.median(step['nvtx']):.2f} ms)", med <= args.max_ratio)
    elif not args.src:
        row("cost nvtx/none", f"median <= {args.max_ratio:.2f}", "no pairs", False)
    w = [max(len(x[i]) for x in rows + [("check", "expected", "got", "result")])
         for i in range(4)]
    for x in [("check", "expected", "got", "result")] + rows:
        print("  ".join(x[i].ljust(w[i]) for i in range(4)))
    return 1 if any(x[3] == "FAIL" for x in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
