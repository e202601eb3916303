"""agree.py BUILD WORKDIR - agreement of apx with an independent measurement: runs
agree_workload.py once under `apx analyze` and once under torch.profiler, then checks that
both saw the same number of kernels and that the GPU time per kernel name agrees within 5%
(kernels are paired in start-time order, since apx keeps CUPTI's mangled names and
torch.profiler demangles them). Exit 0 pass, 1 fail."""
import json
import os
import subprocess
import sys
from collections import defaultdict

build, work = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
wl = os.path.join(here, "agree_workload.py")
apx_file = os.path.join(work, "agree.apx")
chrome = os.path.join(work, "agree_torch.json")
subprocess.run([os.path.join(build, "apx"), "analyze", "-q", "--force", "-o", apx_file, wl],
               check=True)
env = dict(os.environ)
env.pop("CUDA_INJECTION64_PATH", None)
subprocess.run([sys.executable, wl, "--torch-profiler", chrome], check=True, env=env)

dump = subprocess.run([os.path.join(build, "apx-dump"), apx_file], check=True,
                      capture_output=True, text=True).stdout
ours = sorted(((r["start_ns"], r["end_ns"] - r["start_ns"], r["name"])
               for r in map(json.loads, dump.splitlines()) if r["type"] == "kernel"))
with open(chrome) as f:
    events = json.load(f)["traceEvents"]
theirs = sorted((e["ts"], e["dur"] * 1000.0, e["name"]) for e in events
                if e.get("cat") == "kernel")
print(f"agree: apx saw {len(ours)} kernels, torch.profiler {len(theirs)}")
ok = len(ours) == len(theirs)
per = defaultdict(lambda: [0.0, 0.0, 0, ""])
for (_, d1, n1), (_, d2, n2) in zip(ours, theirs):
    p = per[n1]
    p[0] += d1
    p[1] += d2
    p[2] += 1
    p[3] = n2
worst = 0.0
for name, (a, b, n, tname) in sorted(per.items(), key=lambda kv: -kv[1][1]):
    dev = abs(a - b) / b if b else 0.0
    flag = ""
    if b >= 50e3 and dev > 0.05:       # groups of >= 50 us total must agree within 5%
        ok = False
        flag = "  <-- over 5%"
    if b >= 50e3:
        worst = max(worst, dev)
    print(f"  {n:5d} x {tname[:60]:60s} apx {a / 1e6:9.3f} ms  torch {b / 1e6:9.3f} ms"
          f"  {dev * 100:5.2f}%{flag}")
tot_a = sum(p[0] for p in per.values())
tot_b = sum(p[1] for p in per.values())
print(f"agree: total kernel time apx {tot_a / 1e6:.3f} ms, torch.profiler {tot_b / 1e6:.3f} ms "
      f"({abs(tot_a - tot_b) / tot_b * 100:.2f}%); worst per-name deviation {worst * 100:.2f}%")
print("agree: PASS" if ok else "agree: FAIL")
sys.exit(0 if ok else 1)
