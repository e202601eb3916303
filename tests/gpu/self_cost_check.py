"""self_cost_check.py BUILD OUT [RUNS] - the collector's cost per launch measured inside the
traced process (lib/collector/self_cost.c) on the GPU machine: runs the suite's launch-bound
program (tests/gpu/suite/programs.py launch_bound planted, 64 tiny Linear layers a step, 200
steps) RUNS times under `apx analyze` as it is and once with APX_OFF=self-cost, one process each,
and checks in every trace: kv collector_launch_cost_self_ns is there and positive, and kv
collector_launch_cost_self says the medians it came from; no kernel of apx's own stream
(apx_self_*) is in the trace; the program's kernels are all there (as many as with
APX_OFF=self-cost, which measures nothing); the cost includes the launch's Python-stack
callback (switched off in the measurement's off blocks since 2026-12-07) and the program's
kernels still carry their stacks afterwards; no degraded feature. Prints a table of each run's
in-process cost, apx-calibrate's (kv collector_launch_cost_ns, measured before the program in
processes of its own) and its ms a step, then the spread of the in-process values. Exit 1 on a
FAIL."""
import json
import os
import statistics
import subprocess
import sys

build, out = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
here = os.path.dirname(os.path.abspath(__file__))
prog = os.path.join(here, "suite", "programs.py")
apx, dump = os.path.join(build, "apx"), os.path.join(build, "apx-dump")
os.makedirs(out, exist_ok=True)
fails = []


def check(ok, what):
    print(f"{'PASS' if ok else 'FAIL'}  {what}", flush=True)
    if not ok:
        fails.append(what)


def traced(name, off=None):
    trace = os.path.join(out, name + ".apx")
    env = dict(os.environ)
    if off:
        env["APX_OFF"] = off
    p = subprocess.run([apx, "analyze", "-q", "--force", "-o", trace, "--", sys.executable, prog,
                        "launch_bound", "planted", "--steps", "200"],
                       capture_output=True, text=True, env=env)
    ms = next((float(l.split()[3]) for l in p.stdout.splitlines() if l.startswith("SUITE ")), None)
    recs = [json.loads(l) for l in subprocess.run([dump, trace], capture_output=True,
                                                  text=True).stdout.splitlines() if l.startswith("{")]
    kv = {}
    for r in recs:
        if r["type"] == "kv":
            kv.setdefault(r["key"], []).append(r.get("value"))
    names = [r["name"] for r in recs if r["type"] == "kernel"]
    stacked = sum(1 for r in recs if r["type"] == "kernel" and r.get("stack"))
    check(p.returncode == 0 and ms, f"{name}: exit {p.returncode}, {ms} ms a step")
    return {"ms": ms, "kv": kv, "kernels": len(names), "stacked": stacked,
            "own": sum(n.startswith("apx_self") for n in names)}


rows = [traced(f"run{i}") for i in range(runs)]
off = traced("off", "self-cost")
check("collector_launch_cost_self_ns" not in off["kv"], "APX_OFF=self-cost: no in-process cost")
for i, r in enumerate(rows):
    kv = r["kv"]
    self_ns = int(kv.get("collector_launch_cost_self_ns", ["0"])[0])
    check(self_ns > 0, f"run{i}: collector_launch_cost_self_ns {self_ns}; "
          f"{kv.get('collector_launch_cost_self', ['(no medians)'])[0]}")
    check("Python-stack callback" in kv.get("collector_launch_cost_self", [""])[0],
          f"run{i}: the cost includes the launch's Python-stack callback")
    # the callback is on again after the measurement: the program's launches carry stacks
    check(off["stacked"] > 0 and r["stacked"] >= 0.9 * off["stacked"],
          f"run{i}: {r['stacked']} of {r['kernels']} kernels with a Python stack "
          f"({off['stacked']} with APX_OFF=self-cost)")
    check(r["own"] == 0, f"run{i}: {r['own']} kernels of apx's own stream in the trace")
    check(r["kernels"] == off["kernels"], f"run{i}: {r['kernels']} kernels, "
          f"{off['kernels']} with APX_OFF=self-cost")
    check("degraded" not in kv, f"run{i}: degraded {kv.get('degraded')}")
    r["self"] = self_ns
    r["calib"] = int(kv.get("collector_launch_cost_ns", ["0"])[0])

print(f"\n{'run':6s} {'in-process ns':>14s} {'apx-calibrate ns':>17s} {'ms/step':>8s}")
for i, r in enumerate(rows):
    print(f"run{i:<3d} {r['self']:14d} {r['calib']:17d} {r['ms'] or 0:8.3f}")
print(f"off    {'-':>14s} {int(off['kv'].get('collector_launch_cost_ns', ['0'])[0]):17d} "
      f"{off['ms'] or 0:8.3f}")
vals = [r["self"] for r in rows if r["self"]]
if vals:
    print(f"in-process: median {statistics.median(vals)} ns, range {min(vals)}-{max(vals)} ns")
sys.exit(1 if fails else 0)
