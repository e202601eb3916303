#!/usr/bin/env python3
"""plugin_cost.py BUILD [--reps R] [--groups N] [--out DIR] - the cost of apx's NCCL profiler
plugin on the GPU machine, per NCCL version (the one torch loads; printed).

Runs tests/gpu/nccl/self_p2p.py --cost N (N grouped send+recv of 1 KiB from a one-rank
communicator to itself, the one NCCL operation a single GPU hands to a profiler plugin) in
three modes, interleaved, R rounds (each round's order shuffled):
  none     plain python3, no profiler
  apx      apx analyze with NCCL_PROFILER_PLUGIN=none (the collector without the plugin)
  plugin   apx analyze as users run it (NCCL loads the plugin from the injected collector)
Each process prints the host's median time a group (the enqueue, where the plugin's
callbacks run) and the GPU's time a group. Printed last: each mode's median over rounds and
the ratios plugin/apx (the plugin's own cost) and apx/none, medians of the per-round ratios
with a bootstrap 95 % interval, and the added microseconds a group. Each plugin run's trace
says how many operations the plugin recorded and how many found its pool full (kv `nccl`);
a run with any pool-full operation prices a partly recorded run, and the summary says so."""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "..", "..", "tests", "gpu", "nccl", "self_p2p.py")


def boot(values, n=2000):
    rnd = random.Random(1)
    r = sorted(statistics.median(rnd.choices(values, k=len(values))) for _ in range(n))
    return statistics.median(values), r[int(0.025 * n)], r[int(0.975 * n) - 1]


NCCL_KV = re.compile(r"(\d+) operations, (\d+) written .*?(\d+) not recorded \(pool full\)")


def plugin_counts(build, trace):
    """(recorded, pool full) operations from the trace's kv nccl, or None."""
    p = subprocess.run([os.path.join(build, "apx-dump"), trace], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if '"key":"nccl"' in line:
            m = NCCL_KV.search(json.loads(line).get("value", ""))
            if m:
                return int(m.group(2)), int(m.group(3))
    return None


def run(build, mode, groups, out, i):
    res = os.path.join(out, "%s-%d.json" % (mode, i))
    env = dict(os.environ)
    cmd = [sys.executable, PROG, "--cost", str(groups), res]
    if mode != "none":
        cmd = [os.path.join(build, "apx"), "analyze", "-q", "-o",
               os.path.join(out, "%s-%d.apx" % (mode, i)), "--"] + cmd
    if mode == "apx":
        env["NCCL_PROFILER_PLUGIN"] = "none"
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not os.path.exists(res):
        sys.exit("plugin_cost: %s round %d failed (exit %d): %s" %
                 (mode, i, p.returncode, (p.stderr or p.stdout)[-600:]))
    r = json.load(open(res))
    if mode == "plugin":
        r["plugin_counts"] = plugin_counts(build, os.path.join(out, "plugin-%d.apx" % i))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--groups", type=int, default=5000)
    ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    a = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
        ver = torch.cuda.nccl.version()
    except (ImportError, RuntimeError) as e:
        print("SKIP: %s" % e)
        sys.exit(77)
    os.makedirs(a.out, exist_ok=True)
    modes = ["none", "apx", "plugin"]
    res = {m: [] for m in modes}
    for i in range(a.reps):
        order = modes[:]
        random.Random(i).shuffle(order)
        for m in order:
            r = run(a.build, m, a.groups, a.out, i)
            res[m].append(r)
            pc = r.get("plugin_counts")
            print("round %d %-6s host %.2f us a group, GPU %.2f us%s" %
                  (i, m, r["host_us_median"], r["gpu_us_per_group"],
                   "; plugin recorded %d, pool full %d" % tuple(pc) if pc else ""), flush=True)
    json.dump(res, open(os.path.join(a.out, "plugin_cost.json"), "w"), indent=1)
    ver = ".".join(map(str, ver)) if isinstance(ver, tuple) else str(ver)
    print("\nNCCL %s, %d groups of 1 KiB send+recv a process, %d rounds" %
          (ver, a.groups, a.reps))
    print("| mode | host us a group (median of rounds) | GPU us a group |")
    print("|---|---|---|")
    for m in modes:
        print("| %s | %.2f | %.2f |" % (m, statistics.median(x["host_us_median"] for x in res[m]),
                                        statistics.median(x["gpu_us_per_group"] for x in res[m])))
    counts = [x.get("plugin_counts") for x in res["plugin"]]
    if any(c is None for c in counts):
        print("plugin runs: a trace without the plugin's kv nccl (not recorded at all?)")
    elif any(c[1] for c in counts):
        print("plugin runs: %d of %d operations found the pool full: this prices a partly "
              "recorded run, not the full path" % (sum(c[1] for c in counts),
                                                   sum(c[0] + c[1] for c in counts)))
    else:
        print("plugin runs: every operation recorded (%d)" % sum(c[0] for c in counts))
    for num, den in (("plugin", "apx"), ("apx", "none")):
        for key in ("host_us_median", "gpu_us_per_group"):
            ratios = [x[key] / y[key] for x, y in zip(res[num], res[den])]
            added = [x[key] - y[key] for x, y in zip(res[num], res[den])]
            r, a_ = boot(ratios), boot(added)
            print("%s / %s, %s: %.3fx [%.3f, %.3f]; %+.2f us [%+.2f, %+.2f] a group" %
                  (num, den, key, r[0], r[1], r[2], a_[0], a_[1], a_[2]))


main()
