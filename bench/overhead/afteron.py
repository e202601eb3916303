"""afteron.py - what the activity kinds leave behind once they have been on (issue 39's
unexplained "being attached" cost: a traced process's paused blocks ran 1.10-1.53x of an
unprofiled process's on host-bound loops, bench/RESULTS.md). Run on the GPU machine by
afteron.sh under no profiler, the floor (CUPTI, kinds following cudaProfilerStart/Stop) and
apx analyze --capture-range=cudaProfilerApi.

One process: three groups of small eager ops whose kernels load at different times
(CUDA_MODULE_LOADING=LAZY, PyTorch's default): "early" (sin, mul, add: used from the start),
"during" (cumsum: first used while the kinds are on), "late" (cumprod: first used after they
are off again). Each group is timed in phase "before" (kinds never on yet; "late" is skipped:
its kernel must not load before "after"), then one collected block (cudaProfilerStart ... Stop),
then phase "after". Two numbers a group and phase, medians of --blocks blocks:
  host_ns  the main thread's time to issue one op (perf_counter over --ops ops, no sync);
  gpu_ns   the GPU's time a kernel, with the ops queued behind a torch.cuda._sleep spin so
           that they run back to back (CUDA events around the burst).
Prints AFTERON <json> last: {"before": {group: {"host_ns": x, "gpu_ns": y}}, "after": ...}.
If the kinds leave a cost, "after" exceeds "before" (host: the launch path; GPU: kernels still
instrumented); the no-profiler process is the control."""
import argparse
import json
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--blocks", type=int, default=15)
ap.add_argument("--ops", type=int, default=400)
args = ap.parse_args()

x = torch.randn(64, device="cuda")
OPS = {
    "early": lambda: torch.add(torch.mul(torch.sin(x), 1.5), 0.5),
    "during": lambda: torch.cumsum(x, 0),
    "late": lambda: torch.cumprod(x, 0),
}


def host_ns(op):
    """ns to issue one op (each call of op issues 1-3 kernels: divided by the calls)."""
    torch.cuda.synchronize()
    t = time.perf_counter_ns()
    for _ in range(args.ops):
        op()
    dt = time.perf_counter_ns() - t
    torch.cuda.synchronize()
    return dt / args.ops


def gpu_ns(op):
    """GPU ns a call, its kernels back to back behind a spin the host outruns."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    n = 200                                    # <= 600 kernels: under the launch queue's 1024
    torch.cuda._sleep(30_000_000)              # ~15 ms spin: the burst queues behind it
    start.record()
    for _ in range(n):
        op()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e6 / n


def phase(groups):
    out = {}
    for g in groups:
        op = OPS[g]
        op()                                   # loads the kernel if not yet
        h = [host_ns(op) for _ in range(args.blocks)]
        d = [gpu_ns(op) for _ in range(args.blocks)]
        out[g] = {"host_ns": round(statistics.median(h)), "gpu_ns": round(statistics.median(d)),
                  "host_all": [round(v) for v in h]}
    return out


for _ in range(3):                             # warm-up: allocator, cuBLAS-free ops only
    host_ns(OPS["early"])
res = {"before": phase(["early"])}
torch.cuda.profiler.start()
for _ in range(3):
    host_ns(OPS["early"])
    host_ns(OPS["during"])
torch.cuda.synchronize()
torch.cuda.profiler.stop()
res["after"] = phase(["early", "during", "late"])
res["before_again"] = phase(["early"])         # drift check: "after" is not just later
print("AFTERON " + json.dumps(res), flush=True)
