#!/usr/bin/env python3
"""savings.py APX SRCDIR - the report's estimated savings against the fixed variants, on the
committed H200 traces: for each example/fixed pair, the saving the example's rule estimates
must be within 30% of the measured difference of the steady-state GPU-active time (the fixed
variant's run on the same GPU), and the rule must not fire on the fixed variant. The
example's problem must also be its top finding. On every committed real trace: the findings'
savings together stay within the steady window (idle.window_ns), an idle rule's saving within
the idle time attributed to its cause, and start-up findings only in the start-up section
unless start-up dominates. Called by ctest."""
import json
import os
import subprocess
import sys

apx, src = sys.argv[1], sys.argv[2]
real = os.path.join(src, "tests", "fixtures", "real")
# example, fixed variant, the rule of the example's problem
PAIRS = [
    ("pageable_h2d", "pinned_h2d", "pageable-copy"),
    ("launch_bound", "launch_bound_fixed", "launch-bound"),
    ("uvm_migrations", "uvm_fixed", "unified-memory"),
    ("sync_every_step", "sync_fixed", "sync-frequency"),
    ("copies_serial", "copies_overlapped", "copy-overlap"),
]


def report(name):
    out = subprocess.run([apx, "report", "--format", "json", os.path.join(real, name + ".apx")],
                         capture_output=True, text=True, check=False).stdout
    return json.loads(out)


fail = 0
print(f"{'example':18s} {'rule':16s} {'estimated':>10s} {'measured':>10s} {'ratio':>6s}  top finding")
for ex, fixed, rule in PAIRS:
    a, b = report(ex), report(fixed)
    est = [f["saving_ns"] for f in a["findings"] if f["rule"] == rule]
    measured = a["run"]["steady_ns"] - b["run"]["steady_ns"]
    top = a["findings"][0]["rule"] if a["findings"] else "-"
    ratio = est[0] / measured if est and measured > 0 else 0
    print(f"{ex:18s} {rule:16s} {est[0] / 1e6 if est else 0:8.1f}ms {measured / 1e6:8.1f}ms "
          f"{ratio:6.2f}  {top}")
    if not est:
        print(f"FAIL: {ex}: {rule} did not fire"); fail = 1
    elif not 0.7 <= ratio <= 1.3:
        print(f"FAIL: {ex}: estimated saving off by more than 30%"); fail = 1
    if any(f["rule"] == rule for f in b["findings"]):
        print(f"FAIL: {fixed}: {rule} fires on the fixed variant"); fail = 1
    if top != rule:
        print(f"FAIL: {ex}: top finding is {top}, not {rule}"); fail = 1
# idle rules and the cause their saving is bounded by (lib/analysis/idle_attrib.c)
CAUSE = {"sync-frequency": "sync", "input-pipeline": "data", "launch-bound": "launch",
         "gpu-starvation": "unknown"}
for name in sorted(f[:-4] for f in os.listdir(real) if f.endswith(".apx")):
    r = report(name)
    idle = r["idle"]
    total = sum(f["saving_ns"] for f in r["findings"] if f["saving_estimated"] and not f["startup"])
    if total > idle["window_ns"]:
        print(f"FAIL: {name}: savings {total} ns over the steady window {idle['window_ns']} ns")
        fail = 1
    for f in r["findings"]:
        cause = CAUSE.get(f["rule"])
        if cause and f["saving_ns"] > idle["by_cause"][cause]["ns"]:
            print(f"FAIL: {name}: {f['rule']} saves {f['saving_ns']} ns, more than the "
                  f"{idle['by_cause'][cause]['ns']} ns attributed to {cause}")
            fail = 1
        if f["startup"] and not r["startup"]["dominates"]:
            print(f"FAIL: {name}: start-up finding {f['rule']} among the steady state's")
            fail = 1
    if idle["explained_ns"] + idle["unexplained_ns"] != idle["idle_ns"]:
        print(f"FAIL: {name}: explained + unexplained idle != idle"); fail = 1
print("savings: " + ("FAIL" if fail else "every estimate within 30% of its fixed variant; "
                     "savings within the steady window and their causes"))
sys.exit(fail)
