"""pageable_h2d.py - PROBLEM: host->device copies from pageable (not pinned) memory. Each step
copies the next 64 MiB CPU batch to the GPU with .to('cuda'): the driver stages it through a
bounce buffer, so the copy is slow and blocks the CPU. Fixed variant: pinned_h2d.py."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, MIB = 20, 64
n = MIB * 2**20 // 4
batches = [torch.empty(n).fill_(i) for i in range(STEPS)]    # pageable host memory
w = torch.randn(2048, 2048, device="cuda")
for b in batches:
    g = b.to("cuda")                            # pageable H2D copy
    y = (g[: 2048 * 2048].view(2048, 2048) @ w).relu_().sum()
torch.cuda.synchronize()
fact(h2d_pageable_bytes=STEPS * n * 4, h2d_copies=STEPS, host_addr=batches[0].data_ptr(),
     host_buffers=STEPS, fills=[float(i) for i in range(STEPS)], batch_bytes=n * 4)
