"""replay_workload.py - the kernels replay_check.py measures twice, with `apx analyze --replay`
and with ncu: a bf16 GEMM, a memory-bound elementwise kernel, a reduction and an attention
kernel, each launched 12 times on fixed inputs (same shapes, same data in both runs): enough
for apx's one-pass launches, which take only launches right after a plain one (src_replay.c).
REPLAY_SHIFT_MIB=N (dram_spread.py): N MiB of device memory taken first, so the program's
buffers land elsewhere in memory (what a profiler's own allocations also do).
REPLAY_GAP_MS=N: the GPU left idle N ms after each kernel of the loop (does L2 write dirty
lines back while idle?).
REPLAY_RANGE=loop|kernel (dram_loop_total.py): iterations 3-5 of the loop inside profiler
ranges (cudaProfilerStart/Stop), one an iteration or one a kernel, for ncu --replay-mode
app-range."""
import os
import time

ranges = os.environ.get("REPLAY_RANGE", "")
if ranges not in ("", "loop", "kernel"):
    raise SystemExit(f"replay_workload.py: REPLAY_RANGE is loop or kernel, not {ascii(ranges)}")

import torch  # noqa: E402  (after the check: a bad REPLAY_RANGE fails before CUDA starts)
import torch.nn.functional as F  # noqa: E402

torch.manual_seed(0)
dev = torch.device("cuda")
shift = int(os.environ.get("REPLAY_SHIFT_MIB", "0"))
pad = torch.empty(shift << 20, device=dev, dtype=torch.uint8) if shift else None
a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
x = torch.randn(64 << 20, device=dev)            # 256 MiB fp32
y = torch.empty_like(x)
q = torch.randn(8, 16, 1024, 64, device=dev, dtype=torch.bfloat16)
k = torch.randn_like(q)
v = torch.randn_like(q)
torch.cuda.synchronize()
gap = float(os.environ.get("REPLAY_GAP_MS", "0")) / 1000


def idle():
    if gap:
        torch.cuda.synchronize()
        time.sleep(gap)


STEPS = (lambda: torch.matmul(a, b), lambda: torch.mul(x, 3.0, out=y), lambda: x.sum(),
         lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))

for it in range(12):
    ranged = 3 <= it <= 5
    if ranges == "loop" and ranged:
        torch.cuda.profiler.start()
    for run in STEPS:
        if ranges == "kernel" and ranged:
            torch.cuda.profiler.start()
        run()
        if ranges == "kernel" and ranged:
            torch.cuda.profiler.stop()
        idle()
    if ranges == "loop" and ranged:
        torch.cuda.profiler.stop()
torch.cuda.synchronize()
print("done", flush=True)
