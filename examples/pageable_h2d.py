"""pageable_h2d.py - PROBLEM: host->device copies from pageable (not pinned) memory. Each step
copies a 64 MiB CPU tensor to the GPU with .to('cuda'): the driver stages it through a bounce
buffer, so the copy is slow and blocks the CPU. Fixed variant: pinned_h2d.py."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, MIB = 20, 64
x = torch.randn(MIB * 2**20 // 4)              # pageable host memory
w = torch.randn(2048, 2048, device="cuda")
for _ in range(STEPS):
    g = x.to("cuda")                            # pageable H2D copy
    y = (g[: 2048 * 2048].view(2048, 2048) @ w).relu_().sum()
torch.cuda.synchronize()
fact(h2d_pageable_bytes=STEPS * x.numel() * 4, h2d_copies=STEPS, host_addr=x.data_ptr())
