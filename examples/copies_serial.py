"""copies_serial.py - PROBLEM: copies not overlapped with compute. Each batch is copied to the
GPU on the compute stream, so the copy engine and the SMs take turns.
Fixed variant: copies_overlapped.py (side stream, double buffering)."""
from _common import fact, need_cuda

torch = need_cuda()
torch.backends.cuda.matmul.allow_tf32 = True       # tensor cores: not this example's problem
STEPS, MIB = 30, 32
host = [torch.randn(MIB * 2**20 // 4).pin_memory() for _ in range(2)]
w = torch.randn(4096, 4096, device="cuda")
for i in range(STEPS):
    g = host[i % 2].to("cuda", non_blocking=True)   # same stream as the compute
    y = g[: 4096 * 2048].view(2048, 4096) @ w
    y = (y @ w.T).relu_()
torch.cuda.synchronize()
fact(steps=STEPS, h2d_pinned_bytes=STEPS * host[0].numel() * 4)
