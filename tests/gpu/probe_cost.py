"""probe_cost.py --blocks FILE [CALLS_PER_S] - what one probed driver call costs a program: a
4-byte host->device copy from pinned memory (cuMemcpyHtoDAsync_v2, which nvperfd probes) made
at a steady CALLS_PER_S (default 400, under nvperfd's uprobe_max_rate of 1000/s), each call
timed on the host; every 20 calls the block's median call time (ms) goes to FILE as
"END_UNIX_S MS", like daemon_train.py's blocks. Runs until killed. Called by
tests/gpu/daemon_verify.sh (mode "calls"), which starts and stops nvperfd under it."""
import statistics
import sys
import time

import torch

out = open(sys.argv[sys.argv.index("--blocks") + 1], "w")
pos = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--") and
       sys.argv[i - 1] != "--blocks"]
rate = float(pos[0]) if pos else 400.0
a = torch.ones(1).pin_memory()
d = torch.empty(1, device="cuda")
period = 1.0 / rate
nxt = time.perf_counter()
block = []
while True:
    t0 = time.perf_counter_ns()
    d.copy_(a, non_blocking=True)
    block.append(time.perf_counter_ns() - t0)
    if len(block) == 20:
        torch.cuda.synchronize()
        print(f"{time.time():.6f} {statistics.median(block) / 1e6:.6f}", file=out, flush=True)
        block = []
    nxt += period
    time.sleep(max(0.0, nxt - time.perf_counter()))
