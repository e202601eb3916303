"""nsys-stats-agree.py APX FIXTURES - `nsys stats` (Nsight Systems 2025.3.1, run on the GPU machine)
read apx's SQLite export of FIXTURES/pageable.apx (a real H100 trace of the development
suite's pageable case) and wrote the CSVs beside it (apx_cuda_gpu_kern_sum.csv,
apx_cuda_gpu_mem_time_sum.csv, apx_cuda_gpu_mem_size_sum.csv, apx_cuda_api_sum.csv). This
checks that what NVIDIA's own reports computed from apx's database equals what `apx report`
says of the same trace: every kernel's instances and total time (names matched on their first
100 characters: nsys prints them as the database holds them), and the host-to-device copies'
count, time and bytes. Exit 0 when all agree. How the CSVs were made: docs/export.md, "nsys
stats"."""
import csv
import json
import os
import subprocess
import sys

apx, fx = sys.argv[1], sys.argv[2]
trace = os.path.join(fx, "pageable.apx")
doc = json.loads(subprocess.run([apx, "report", "--format", "json", trace], capture_output=True,
                                text=True, check=True).stdout)
fails = []


def rows(name):
    with open(os.path.join(fx, name), newline="") as fh:
        return list(csv.DictReader(fh))


apx_k = {k["name"][:100]: (k["count"], k["total_ns"]) for k in doc["kernels"]}
kern = rows("apx_cuda_gpu_kern_sum.csv")
if len(kern) != len(apx_k):
    fails.append(f"nsys lists {len(kern)} kernels, apx {len(apx_k)}")
for r in kern:
    got = (int(r["Instances"]), int(r["Total Time (ns)"]))
    want = apx_k.get(r["Name"][:100])
    if got != want:
        fails.append(f"kernel {r['Name'][:60]}: nsys {got}, apx {want}")
h2d = [t for t in doc["transfers"] if t["direction"] == "H2D"]
mem_t = {r["Operation"]: r for r in rows("apx_cuda_gpu_mem_time_sum.csv")}
mem_s = {r["Operation"]: r for r in rows("apx_cuda_gpu_mem_size_sum.csv")}
t = mem_t.get("[CUDA memcpy Host-to-Device]")
s = mem_s.get("[CUDA memcpy Host-to-Device]")
count = sum(x["count"] for x in h2d)
time_ns = sum(x["time_ns"] for x in h2d)
mb = sum(x["bytes"] for x in h2d) / 1e6
if not t or int(t["Count"]) != count or int(t["Total Time (ns)"]) != time_ns:
    fails.append(f"H2D time: nsys {t and (t['Count'], t['Total Time (ns)'])}, apx {count} {time_ns}")
if not s or abs(float(s["Total (MB)"]) - mb) > 0.001:
    fails.append(f"H2D bytes: nsys {s and s['Total (MB)']} MB, apx {mb:.3f} MB")
for f in fails:
    print("FAIL:", f)
print(f"nsys-stats-agree: {len(kern)} kernels, {count} H2D copies ({mb:.3f} MB, {time_ns} ns): "
      f"{'ok' if not fails else 'FAILED'}")
sys.exit(1 if fails else 0)
