#!/usr/bin/env python3
"""run.py BUILD [--rounds R] [--json OUT] - what libapx-heap.so (apx analyze
--heap-sampling-bytes N) costs, interleaved: every round runs every workload once in every mode,
in a rotated order, and each mode's time is divided by the same round's time without the
library. Prints, per workload and mode, the median ratio over the rounds with a 95 %
distribution-free interval of the median (order statistics: at 5-7 rounds the interval is the
min..max of the ratios), the samples a run made, and the cost per sample.

Modes: none (no preload); off (preloaded, APX_HEAP_SAMPLING_BYTES unset: the wrappers alone);
512k and 64k (sampling every 512 KiB / 64 KiB, a thread taking the samples as the collector's
writer does); 512k-nostack (APX_HEAP_NATIVE_STACKS=0: the same without the native stacks, to
price glibc's backtrace()); large (APX_HEAP_LARGE_BYTES=1048576 and no sampling: what apx
analyze preloads by default, every allocation of 1 MiB or more recorded). --modes picks some
(none always runs).

Workloads: bench-heap (bench-heap.c: malloc + free of a mixed size, nothing else: the worst
case), bench-heap x2 (two threads), python-json (CPython building, dumping and loading JSON:
its objects over 512 bytes come from malloc) and torch-mlp (a CPU MLP's training steps,
libtorch's allocator on posix_memalign), each timed as CPU time inside the process.
Not run by ctest; results go to bench/RESULTS.md.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

JSON_PY = r'''
import json, time
data = [{"id": i, "name": "item-%d" % i, "tags": ["t%d" % (i % 7)] * 4, "blob": "x" * (i % 2000)}
        for i in range(20000)]
t = time.process_time()
for _ in range(6):
    s = json.dumps(data)
    back = json.loads(s)
    keep = [bytes(len(d["blob"]) + 600) for d in back[:5000]]
print("cpu_s", time.process_time() - t)
'''

TORCH_PY = r'''
import time, torch
torch.manual_seed(0)
torch.set_num_threads(1)
m = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512),
                        torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
for _ in range(20):
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
t = time.process_time()
for _ in range(300):
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
print("cpu_s", time.process_time() - t)
'''

MODES = {
    "none": None,
    "off": {},
    "512k": {"APX_HEAP_SAMPLING_BYTES": "524288"},
    "512k-nostack": {"APX_HEAP_SAMPLING_BYTES": "524288", "APX_HEAP_NATIVE_STACKS": "0"},
    "64k": {"APX_HEAP_SAMPLING_BYTES": "65536"},
    "large": {"APX_HEAP_LARGE_BYTES": "1048576"},
}


def median_ci(xs):
    """Median and a 95 % distribution-free interval (order statistics of the binomial)."""
    xs = sorted(xs)
    n = len(xs)
    k = 0
    cum = 0.0
    for j in range(n + 1):	# largest k with P(Binom(n, 1/2) < k) <= 0.025
        if cum + math.comb(n, j) / 2 ** n > 0.025:
            k = j
            break
        cum += math.comb(n, j) / 2 ** n
    lo, hi = xs[max(k - 1, 0)], xs[min(n - k, n - 1)]
    return statistics.median(xs), lo, hi


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", default="3000000")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--json")
    ap.add_argument("--modes", default=",".join(MODES))
    a = ap.parse_args()
    for m in list(MODES):
        if m != "none" and m not in a.modes.split(","):
            del MODES[m]
    lib = os.path.join(a.build, "libapx-heap.so")
    bench = os.path.join(a.build, "bench", "heap", "bench-heap")
    torch_ok = subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode == 0
    workloads = {
        "bench-heap": ([bench, "1", a.ops], "ns_per_op"),
        "bench-heap x2": ([bench, "2", a.ops], "ns_per_op"),
        "python-json": ([a.python, "-c", JSON_PY], "cpu_s"),
    }
    if torch_ok:
        workloads["torch-mlp"] = ([a.python, "-c", TORCH_PY], "cpu_s")
    res = {w: {m: [] for m in MODES} for w in workloads}
    samples = {w: {m: [] for m in MODES} for w in workloads}
    names = list(MODES)
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for w, (cmd, key) in workloads.items():
            for m in order:
                env = {k: v for k, v in os.environ.items()
                       if not k.startswith("APX_") and k != "LD_PRELOAD"}
                if MODES[m] is not None:
                    env["LD_PRELOAD"] = lib
                    env.update(MODES[m])
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
                if out.returncode:
                    sys.exit(f"{w} {m}: exit {out.returncode}: {out.stderr[-400:]}")
                f = out.stdout.split()
                res[w][m].append(float(f[f.index(key) + 1]))
                if "samples" in f:
                    samples[w][m].append(int(f[f.index("samples") + 1]))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"libapx-heap.so cost, {a.rounds} interleaved rounds: time / the same round's time "
          f"without it, median [95 % interval]")
    print(f"{'workload':16} {'none':>10} " + " ".join(f"{m:>22}" for m in names[1:]))
    table = {}
    for w in workloads:
        base = res[w]["none"]
        cells = []
        table[w] = {"none_median": statistics.median(base)}
        for m in names[1:]:
            ratios = [x / b for x, b in zip(res[w][m], base)]
            med, lo, hi = median_ci(ratios)
            cells.append(f"{med:.3f}x [{lo:.3f}, {hi:.3f}]")
            table[w][m] = {"median": med, "lo": lo, "hi": hi, "ratios": ratios,
                           "samples": samples[w][m]}
        unit = "ns/op" if workloads[w][1] == "ns_per_op" else "s"
        print(f"{w:16} {statistics.median(base):>7.3f} {unit:>2} " +
              " ".join(f"{c:>22}" for c in cells))
    # the cost of one sample in the C loop: (time with - time off) / samples a run
    for w in ("bench-heap",):
        for m in ("512k", "512k-nostack", "64k"):
            if m in MODES and "off" in MODES and samples[w][m]:
                d = statistics.median(res[w][m]) - statistics.median(res[w]["off"])
                per = d * float(a.ops) / statistics.median(samples[w][m])
                print(f"{w} {m}: {statistics.median(samples[w][m]):.0f} samples a run, "
                      f"{per / 1000:.2f} us a sample")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": a.rounds, "results": table}, f, indent=1)


if __name__ == "__main__":
    main()
