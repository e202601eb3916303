"""capture_check.py BUILD OUT | BUILD --from DIR - `apx analyze --capture-range=cudaProfilerApi`
(the overhead benchmark pauses the collector with it) on the GPU: runs capture_workload.py
(sin, then cos inside a range, tanh outside, exp in a second range left open at exit) under
the light level and under --metrics, reads the traces with apx-dump and checks:

- kernels: exactly the N cos and N exp launches; no sin or tanh kernel;
- kv "capture": start, stop, start, in that order, the edges bracketing the phases
  (PHASE lines, same clock) and a kv capture_mode;
- cudaProfilerStop returns within 50 ms (switching the activity kinds off; kv
  capture_switch_max says what each kind's switch cost);
- PM sampling: samples in both ranges, none outside them after the first 20 ms (the writer
  stops the sampler between ranges and restarts it), no "degraded" kv, exit status 0 (the
  sampler is not disabled at exit: cuptiPmSamplingDisable crashed there);
- the collector's NVML readings (src_nvml.c): present, none inside the phases outside the
  ranges (a reading covers the 50 ms before it);
- `apx report --format json` says 2 capture ranges.

--from DIR runs the same checks on traces captured before (DIR/capture_light.apx,
capture_metrics.apx and their .log files), no GPU needed (no ctest runs it: the run of
2026-12-02 is kept as tests/fixtures/capture/capture_check.log).
Prints PASS/FAIL lines; exit 1 on any FAIL."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import known  # noqa: E402

S = known.Setup(sys.argv)
offline, out, apx, dump, check = S.offline, S.out, S.apx, S.dump, S.check
here = os.path.dirname(os.path.abspath(__file__))
N = 1500


def analyze(name, opts, lead_s=0):
    trace = os.path.join(out, name + ".apx")
    log = os.path.join(out, name + ".log")
    if not offline:
        cmd = [apx, "analyze", "-f", "-o", trace, "--capture-range=cudaProfilerApi"] + opts + \
            ["--", sys.executable, os.path.join(here, "capture_workload.py"), str(N),
             str(lead_s)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        open(log, "w").write(p.stdout + p.stderr + f"\napx analyze exit status {p.returncode}\n")
    return known.logged_run(log), trace


def records(trace):
    return known.records(dump, trace)


phases = known.phases


def edges(recs):
    out = []
    for r in recs:
        if r.get("type") == "kv" and r.get("key") == "capture":
            what, ns = r.get("value", "").split()
            out.append((what, int(ns)))
    return out


def common(name, run, trace):
    recs = records(trace)
    ph = phases(run.stdout)
    check(run.returncode == 0 and set(ph) == {"sin", "cos", "tanh", "exp"},
          f"{name}: exit status {run.returncode}, phases {sorted(ph)}")
    names = [r.get("name", "") for r in recs if r.get("type") == "kernel"]
    # mangled (15cos_kernel_cuda) or demangled (::cos_kernel_cuda); not asin, cosh, ...
    count = {k: sum(1 for s in names if re.search(r"(\d|\b)" + k + "_kernel_cuda", s))
             for k in ("sin", "cos", "tanh", "exp")}
    check(count["cos"] == N and count["exp"] == N and count["sin"] == 0 and count["tanh"] == 0,
          f"{name}: kernels per phase {count} (want cos {N}, exp {N}, sin 0, tanh 0)")
    e = edges(recs)
    ok = [w for w, _ in e] == ["start", "stop", "start"] and len(ph) == 4
    if ok:
        ok = (ph["sin"][1] <= e[0][1] <= ph["cos"][0] and ph["cos"][1] <= e[1][1] <=
              ph["tanh"][0] and ph["tanh"][1] <= e[2][1] <= ph["exp"][0])
    check(ok, f"{name}: capture edges {[w for w, _ in e]} bracket the phases")
    modes = [r.get("value") for r in recs if r.get("type") == "kv" and r.get("key") == "capture_mode"]
    check(modes == ["cudaProfilerApi"], f"{name}: kv capture_mode {modes}")
    if len(ph) == 4:    # the program's own start/stop calls: what switching the kinds cost it
        gap = (ph["tanh"][0] - ph["cos"][1]) / 1e6
        sw = [r.get("value") for r in recs if r.get("type") == "kv" and
              r.get("key") == "capture_switch_max"]
        check(gap < 50, f"{name}: cudaProfilerStop took {gap:.1f} ms (under 50 ms); "
              f"longest switch per kind: {sw}")
    return recs, ph


run, trace = analyze("capture_light", [])
common("light", run, trace)
rep = subprocess.run([apx, "report", "--format", "json", trace], capture_output=True, text=True)
try:
    cap = json.loads(rep.stdout).get("run", {}).get("capture")
except ValueError:
    cap = None
check(rep.returncode == 0 and isinstance(cap, dict) and cap.get("ranges") == 2,
      f"light: apx report --format json: capture {cap}")

# the sampler runs from the context's creation; its first sample comes up to 1 s later
run, trace = analyze("capture_metrics", ["--metrics"], lead_s=1.5)
recs, ph = common("metrics", run, trace)
samples = [r for r in recs
           if r.get("type") == "metric" and not r.get("name", "").startswith("nvml.")]
# the collector's NVML readings (src_nvml.c) follow the ranges too: none inside the phases out
nvml = [r for r in recs if r.get("type") == "metric" and r.get("name", "").startswith("nvml.")]
if len(ph) == 4:
    # the writer starts, stops and restarts the sampler on its own thread, woken by the
    # start/stop callback: allow it LAG ns after an edge
    LAG = 20000000
    inside = {k: sum(1 for s in samples if ph[k][0] + LAG <= s["ts_ns"] and s["end_ns"] <= ph[k][1])
              for k in ph}
    check(inside["cos"] > 0 and inside["exp"] > 0 and inside["sin"] == 0 and inside["tanh"] == 0,
          f"metrics: samples inside each phase after {LAG // 1000000} ms {inside} "
          "(none outside the ranges)")
    # a reading covers the 50 ms before it: allow one period after a stop edge
    out = {k: sum(1 for s in nvml if ph[k][0] + 60000000 <= s["ts_ns"] and s["end_ns"] <= ph[k][1])
           for k in ("sin", "tanh")}
    if nvml or not offline:   # a fixture from before the NVML readings has none
        check(nvml and not any(out.values()),
              f"nvml: {len(nvml)} power and clock readings, none inside the phases out of the "
              f"ranges {out}")
bad = [r.get("value") for r in recs if r.get("type") == "kv" and r.get("key") == "degraded"]
check(not bad, f"metrics: degraded {bad}")
sys.exit(check.finish())
