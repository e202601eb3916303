"""capture_workload.py - the program capture_check.py runs under `apx analyze
--capture-range=cudaProfilerApi`: four phases of one elementwise kernel each on a 256 MiB
tensor (sin, cos, tanh, exp; N launches each, synchronized), with torch.cuda.profiler.start()
before cos, stop() after it, and start() again before exp (which runs to the exit without a
stop). Prints `PHASE <name> <start ns> <end ns>` on CLOCK_MONOTONIC (the trace clock).
A second argument waits that many seconds after the warm-up, before the first phase, as a
program's set-up would: PM sampling's first sample comes 0.66-1.03 s after the sampler starts."""
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
x = torch.randn(64 << 20, device="cuda")
y = torch.empty_like(x)
for f in (torch.sin, torch.cos, torch.tanh, torch.exp):    # warm-up, uncollected
    f(x, out=y)
torch.cuda.synchronize()
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)


def phase(name, f):
    t0 = time.monotonic_ns()
    for _ in range(n):
        f(x, out=y)
    torch.cuda.synchronize()
    print(f"PHASE {name} {t0} {time.monotonic_ns()}", flush=True)


phase("sin", torch.sin)
torch.cuda.profiler.start()
phase("cos", torch.cos)
torch.cuda.profiler.stop()
phase("tanh", torch.tanh)
torch.cuda.profiler.start()
phase("exp", torch.exp)
