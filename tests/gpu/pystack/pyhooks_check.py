#!/usr/bin/env python3
# pyhooks_check.py - function tracing and memory sampling on the GPU:
# `--trace-functions memaug:augment` and `--memory-sampling` checked against the program's own
# numbers (memphases.py). Rows:
#   - the traced function's ranges: as many as the program's calls of it (all >= the 1 ms
#     threshold), each range's duration within 10 % + 0.2 ms of the program's own timing
#     (median), shown in the report's NVTX table under the apx.functions domain;
#   - PyTorch memory over time: the report's max of torch.peak_allocated_bytes equals
#     torch.cuda.max_memory_allocated(), its max of torch.reserved_bytes equals
#     max_memory_reserved() (each phase lasts >= 0.6 s, six samples at 10 Hz), the
#     allocated bytes pass through every phase's level (a sample within 1 MiB of each);
#   - the process's RSS is sampled (rss_peak >= rss > 0).
# Exit 0 all PASS, 1 a FAIL, 77 no GPU. Output: OUT/memphases.{apx,json,log}.
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("apx")
ap.add_argument("out", nargs="?", default="pyhooks-out")
ap.add_argument("--timeout", type=float, default=180)
args = ap.parse_args()
rows = []


def row(ok, what, detail):
    kind = {True: "PASS", False: "FAIL", None: "INFO"}[ok]
    rows.append(kind)
    print("%-4s %-44s %s" % (kind, what, detail), flush=True)


try:
    import torch
    if not torch.cuda.is_available():
        raise ImportError("no CUDA device")
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)
os.makedirs(args.out, exist_ok=True)
trace = os.path.join(args.out, "memphases.apx")
cmd = [args.apx, "analyze", "--force", "-o", trace, "--trace-functions", "memaug:augment",
       "--trace-functions-threshold", "1000", "--memory-sampling", "10", "--",
       sys.executable, os.path.join(HERE, "memphases.py")]
env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
open(os.path.join(args.out, "memphases.log"), "w").write(p.stdout + p.stderr)
row(p.returncode == 0, "apx analyze exits 0", "exit %d" % p.returncode)
line = [ln for ln in p.stdout.splitlines() if ln.startswith("PHASES ")]
if not line:
    print((p.stdout + p.stderr)[-3000:])
    sys.exit(1)
truth = json.loads(line[-1][7:])
rep = subprocess.run([args.apx, "report", "--format", "json", trace], capture_output=True,
                     text=True)
open(os.path.join(args.out, "memphases.json"), "w").write(rep.stdout)
doc = json.loads(rep.stdout)

# traced function: MARKER ranges of domain apx.functions (apx-dump)
dump = os.path.join(os.path.dirname(os.path.abspath(args.apx)), "apx-dump")
recs = [json.loads(x) for x in subprocess.run([dump, trace], capture_output=True, text=True)
        .stdout.splitlines()]
rng = [r for r in recs if r.get("type") == "marker" and r.get("domain") == "apx.functions"]
durs = sorted(r["end_ns"] - r["start_ns"] for r in rng if r.get("end_ns"))
want = truth["augment_ns"]
row(len(durs) == len(want), "one range per call of augment()",
    "%d ranges, %d calls" % (len(durs), len(want)))
if durs:
    mr, mw = statistics.median(durs), statistics.median(want)
    row(abs(mr - mw) <= 0.1 * mw + 2e5, "range duration = the program's timing (median)",
        "%.2f ms vs %.2f ms" % (mr / 1e6, mw / 1e6))
nv = json.dumps(doc.get("nvtx", doc.get("nvtx_ranges", "")))
row("augment" in nv, "augment in the report's NVTX ranges", "found" if "augment" in nv else
    "missing from %s" % ", ".join(sorted(doc.keys())))

# memory over time
ot = {}
for s in doc.get("memory", {}).get("over_time", []):
    ot[(s["metric"], s.get("device"))] = s
peak = ot.get(("torch.peak_allocated_bytes", 0), {}).get("max_bytes")
resv = ot.get(("torch.reserved_bytes", 0), {}).get("max_bytes")
row(peak == truth["max_allocated"], "peak allocated = max_memory_allocated()",
    "%s vs %d" % (peak, truth["max_allocated"]))
row(resv == truth["max_reserved"], "max reserved = max_memory_reserved()",
    "%s vs %d" % (resv, truth["max_reserved"]))
samples = [r["value"] for r in recs if r.get("type") == "metric"
           and r.get("name") == "torch.allocated_bytes"]
hit = [any(abs(v - h) <= 1 << 20 for v in samples) for h in truth["held"]]
row(all(hit), "allocated passes through every phase's level",
    "%d samples; phases %s MiB: %s" % (len(samples), [h >> 20 for h in truth["held"]], hit))
rss, rpk = ot.get(("process.rss_bytes", None), {}), ot.get(("process.rss_peak_bytes", None), {})
row(bool(rss) and rpk.get("max_bytes", 0) >= rss.get("max_bytes", 1) > 0,
    "process RSS and its peak sampled", "rss max %s, peak %s" %
    (rss.get("max_bytes"), rpk.get("max_bytes")))
print("pyhooks_check: %d PASS, %d FAIL" % (rows.count("PASS"), rows.count("FAIL")))
sys.exit(1 if "FAIL" in rows else 0)
