"""metrics_check.py BUILD OUT - `apx analyze --metrics` (PM sampling) on the GPU:
runs metrics_workload.py under the summary set at 1 kHz and under the throughput set at
2 kHz, reads the traces with apx-dump, and checks them against what the workload did:

- METRIC records with an interval (end_ns) for every metric of the set, on the trace clock
  (inside the run), about one per millisecond (the kv `metrics` line says what was granted);
- DRAM bytes integrated over the memory phase = 50 x 1 GiB read and 50 x 1 GiB written
  (within 15 %; the kernels' own DRAM traffic is the independent measure);
- tensor pipe busy in the tensor phase (> 20 %) and idle in the memory phase (< 5 %);
  SM active < 5 % in the idle gaps;
- a second `apx analyze --metrics` while the first samples: one `degraded` line saying the
  counters are in use, and its kernels still recorded.
Prints PASS/FAIL lines and a table last; exit 1 on any FAIL.

metrics_check.py BUILD --from DIR: the same checks on traces captured before (DIR has
summary.apx, throughput.apx, second.apx and the NAME.log each run wrote: exit status, PHASE
lines, stderr), no GPU needed (ctest hwc_metrics_check on tests/fixtures/hwc). A check listed
in DIR/known-differences.txt (its id, then the measured numbers and the reason) prints KNOWN
and does not fail; one listed that passes says so (take it off the list)."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import known  # noqa: E402  (tests/gpu/known.py: --from DIR and the known differences)

S = known.Setup(sys.argv)
build, offline, out, apx, dump, check = S.build, S.offline, S.out, S.apx, S.dump, S.check
here = os.path.dirname(os.path.abspath(__file__))
table = []


def analyze(name, opts, idle="0.3", wait=True):
    trace = os.path.join(out, name + ".apx")
    if offline:
        return known.logged_run(os.path.join(out, name + ".log")), trace
    cmd = [apx, "analyze", "-f", "-o", trace] + opts + ["--", sys.executable,
                                                       os.path.join(here, "metrics_workload.py"), idle]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), trace
    p = subprocess.run(cmd, capture_output=True, text=True)
    open(os.path.join(out, name + ".log"), "w").write(p.stdout + p.stderr)
    return p, trace


def records(trace):
    return known.records(dump, trace)


phases = known.phases


def integrate(samples, t0, t1):
    """sum of rate x overlap with [t0, t1] (rates per second), and the mean of the values."""
    tot, w = 0.0, 0
    for s in samples:
        ov = min(s["end_ns"], t1) - max(s["ts_ns"], t0)
        if ov > 0:
            tot += s["value"] * ov / 1e9
            w += ov
    return tot, (tot * 1e9 / w if w else None)


def pct(v):
    return "none" if v is None else f"{v:.2f}"


def one(name, opts, hz, want):
    p, trace = analyze(name, opts)
    check(p.returncode == 0, f"{name}: apx analyze exit {p.returncode}", f"{name}.exit")
    recs = records(trace)
    kv = {}
    for r in recs:
        if r["type"] == "kv":
            kv.setdefault(r.get("key"), []).append(r.get("value"))
    deg = [v for v in kv.get("degraded", []) if "metrics" in (v or "")]
    check(not deg, f"{name}: no metrics degradation {deg}", f"{name}.degraded")
    check("metrics" in kv, f"{name}: kv metrics: {kv.get('metrics')}; clock {kv.get('metrics_clock')}",
          f"{name}.kv_metrics")
    met = [r for r in recs if r["type"] == "metric" and r.get("end_ns")]
    names = sorted({r["name"] for r in met})
    check(set(want) <= set(names), f"{name}: metrics recorded {len(names)}: {names}", f"{name}.metrics")
    ker = [r for r in recs if r["type"] == "kernel"]
    ph = phases(p.stdout)
    if not met or not ker or "memory" not in ph:
        check(False, f"{name}: samples {len(met)}, kernels {len(ker)}, phases {ph}", f"{name}.data")
        return
    by = {}
    for r in met:
        by.setdefault(r["name"], []).append(r)
    first, last = min(r["ts_ns"] for r in met), max(r["end_ns"] for r in met)
    kfirst, klast = min(k["start_ns"] for k in ker), max(k["end_ns"] for k in ker)
    check(first <= ph.get("memory", (0, 0))[0] and last >= klast - 5e8 and first > kfirst - 60e9,
          f"{name}: samples span {first}..{last}, kernels {kfirst}..{klast}, phases from "
          f"{ph.get('memory', (0, 0))[0]} (same clock)", f"{name}.span")
    n = len(by[names[0]])
    mean_len = sum(r["end_ns"] - r["ts_ns"] for r in by[names[0]]) / n
    check(abs(mean_len - 1e9 / hz) < 0.5 * 1e9 / hz,
          f"{name}: {n} samples of {names[0]}, mean length {mean_len / 1e3:.1f} us (asked {1e6 / hz:.0f} us)",
          f"{name}.sample_length")
    m0, m1 = ph["memory"]
    t0, t1 = ph["tensor"]
    res = {}
    for key in by:
        res[key] = {ph_name: integrate(by[key], a, b) for ph_name, (a, b) in
                    (("memory", (m0, m1)), ("tensor", (t0, t1)), ("idle", (m1 + 50_000_000, t0 - 50_000_000)))}
    gib50 = 50 * (1 << 30)
    for key, label in (("dram__bytes_read.sum.per_second", "read"), ("dram__bytes_write.sum.per_second", "written")):
        if key in res:
            got = res[key]["memory"][0]
            check(abs(got / gib50 - 1) < 0.15, f"{name}: DRAM {label} in the memory phase "
                  f"{got / 2**30:.1f} GiB, the kernels moved 50.0 GiB ({got / gib50:.3f})", f"{name}.dram_{label}")
            table.append((name, f"DRAM {label} GiB (memory phase)", f"{got / 2**30:.2f}", "50.00"))
    tp = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
    if tp in res:
        tm, mm = res[tp]["tensor"][1], res[tp]["memory"][1]
        check(tm is not None and tm > 20 and mm is not None and mm < 5,
              f"{name}: tensor pipe {pct(tm)} % in the tensor phase, {pct(mm)} % in the memory phase",
              f"{name}.tensor_pipe")
        table.append((name, "tensor pipe % tensor/memory phase", f"{pct(tm)} / {pct(mm)}", "> 20 / < 5"))
    sa = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
    if sa in res and res[sa]["idle"][1] is not None:
        check(res[sa]["idle"][1] < 5, f"{name}: SM active {pct(res[sa]['idle'][1])} % in the idle gap",
              f"{name}.sm_idle")
        check(res[sa]["memory"][1] is not None and res[sa]["memory"][1] > 50,
              f"{name}: SM active {pct(res[sa]['memory'][1])} % in the memory phase", f"{name}.sm_memory")
        table.append((name, "SM active % idle gap / memory", f"{pct(res[sa]['idle'][1])} / {pct(res[sa]['memory'][1])}", "< 5"))


one("summary", ["--metrics"], 1000, ["dram__bytes_read.sum.per_second",
                                      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"])
one("throughput", ["--metrics=throughput", "--metrics-frequency", "2000"], 2000,
    ["dram__bytes_read.sum.per_second", "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"])

# counters held by another sampler: the second run says so once and keeps its kernels
if not offline:
    first, _ = analyze("holder", ["--metrics"], idle="3", wait=False)
    time.sleep(4)
p, trace = analyze("second", ["--metrics"])
if not offline:
    first.communicate()
recs = records(trace)
deg = [r.get("value") for r in recs if r["type"] == "kv" and r.get("key") == "degraded"
       and "metrics" in (r.get("value") or "")]
nk = sum(r["type"] == "kernel" for r in recs)
check(p.returncode == 0 and len(deg) == 1 and nk > 0,
      f"second sampler: exit {p.returncode}, degraded {deg}, {nk} kernels recorded", "second.degraded")
said = [l for l in p.stderr.splitlines() if "in use" in l]
check(len(said) == 1, f"second sampler: one stderr line says the counters are in use: {said}",
      "second.stderr")

gpu = next((r.get("name") for r in recs if r["type"] == "device"), None) or "GPU not recorded"
print("\nmetrics check (%s%s):" % (ascii(gpu)[1:-1], ", from " + out if offline else ""))
for row in table:
    print("  %-11s %-38s %-16s want %s" % row)
sys.exit(check.finish())
