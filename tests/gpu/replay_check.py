"""replay_check.py BUILD OUT - `apx analyze --replay` (kernel replay with CUPTI's range profiler,
issue 13 item 2) against Nsight Compute on the same GPU: runs replay_workload.py (a GEMM, an
elementwise kernel, a reduction, an attention kernel, 6 launches each) once under
`apx analyze --replay --replay-max 3` and once under `ncu --clock-control none --csv --page raw`
with the same metric names, and compares per kernel the medians of the launches: within 5 %
(or 1 point for percentages near 0). Also checks: every replayed launch's counters join a
kernel record by correlation id; at most 3 + sampled launches per kernel replayed; kv `replay`
says what it cost; the program's exit status is kept. Prints a table last; exit 1 on a FAIL."""
import csv
import glob
import io
import json
import os
import shutil
import statistics
import subprocess
import sys

build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
here = os.path.dirname(os.path.abspath(__file__))
apx, dump = os.path.join(build, "apx"), os.path.join(build, "apx-dump")
os.makedirs(out, exist_ok=True)
work = os.path.join(here, "replay_workload.py")
fails = 0
COMPARE = ["gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "l1tex__t_sector_hit_rate.pct",
           "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio"]
KINDS = {"gemm": ("gemm", "xmma", "cutlass", "sm90"), "elementwise": ("elementwise",),
         "reduction": ("reduce_kernel",), "attention": ("flash", "fmha", "attention")}


def check(ok, what):
    global fails
    print(("PASS  " if ok else "FAIL  ") + what, flush=True)
    fails += not ok


def kind_of(name):
    low = name.lower()
    for k, keys in KINDS.items():
        if any(s in low for s in keys):
            return k
    return None


trace = os.path.join(out, "replay.apx")
p = subprocess.run([apx, "analyze", "-f", "-o", trace, "--replay", "--replay-max", "3", "--",
                    sys.executable, work], capture_output=True, text=True)
open(os.path.join(out, "replay.log"), "w").write(p.stdout + p.stderr)
check(p.returncode == 0 and "done" in p.stdout, f"apx analyze --replay exit {p.returncode}")
recs = [json.loads(l) for l in subprocess.run([dump, trace], capture_output=True,
                                              text=True).stdout.splitlines() if l.startswith("{")]
kern = {r["correlation"]: r for r in recs if r["type"] == "kernel"}
ctr = [r for r in recs if r["type"] == "counter"]
kv = [r.get("value") for r in recs if r["type"] == "kv" and r.get("key") in ("replay", "degraded")]
print("kv:", kv)
check(ctr and all(c["correlation"] in kern for c in ctr),
      f"{len(ctr)} counters, all joined to kernel records by correlation id")
apx_vals = {}            # kind -> metric -> [values]
per_kernel = {}
for c in ctr:
    k = kern.get(c["correlation"])
    if not k:
        continue
    per_kernel.setdefault(k["name"], set()).add(c["correlation"])
    kd = kind_of(k["name"])
    if kd:
        apx_vals.setdefault(kd, {}).setdefault(c["name"], []).append(c["value"])
check(per_kernel and max(len(v) for v in per_kernel.values()) <= 3,
      f"replayed launches per kernel: {sorted(len(v) for v in per_kernel.values())} (<= 3)")
check(set(KINDS) <= set(apx_vals), f"kernel kinds replayed: {sorted(apx_vals)}")

ncu = shutil.which("ncu") or (sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) or [None])[-1]
ncu_vals = {}
if not ncu:
    check(False, "ncu not found")
else:
    q = subprocess.run([ncu, "--clock-control", "none", "--csv", "--page", "raw",
                        "--print-kernel-base", "mangled", "--metrics", ",".join(COMPARE),
                        sys.executable, work], capture_output=True, text=True)
    open(os.path.join(out, "ncu.csv"), "w").write(q.stdout)
    lines = [l for l in q.stdout.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    check(q.returncode == 0 and len(rows) > 2, f"ncu exit {q.returncode}, {len(rows) - 2} kernels")
    if len(rows) > 2:
        head = rows[0]
        for row in rows[2:]:
            d = dict(zip(head, row))
            kd = kind_of(d.get("Kernel Name", ""))
            if not kd:
                continue
            for m in COMPARE:
                try:
                    val = float(d[m].replace(",", ""))
                except (KeyError, ValueError):
                    continue
                ncu_vals.setdefault(kd, {}).setdefault(m, []).append(val)

print("\nreplay vs ncu --clock-control none (medians of the launches):")
print(f"  {'kernel':11s} {'metric':62s} {'apx':>14s} {'ncu':>14s} {'diff':>7s}")
for kd in KINDS:
    for m in COMPARE:
        a = apx_vals.get(kd, {}).get(m)
        n = ncu_vals.get(kd, {}).get(m)
        if not a or not n:
            continue
        am, nm = statistics.median(a), statistics.median(n)
        rel = abs(am - nm) / abs(nm) if nm else abs(am)
        ok = rel <= 0.05 or (("pct" in m or "rate" in m) and abs(am - nm) <= 1.0)
        print(f"  {kd:11s} {m:62s} {am:14.4g} {nm:14.4g} {rel * 100:6.1f}% {'ok' if ok else 'FAIL'}")
        fails += not ok
sys.exit(1 if fails else 0)
