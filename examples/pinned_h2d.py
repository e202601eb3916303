"""pinned_h2d.py - FIX of pageable_h2d.py: the same 64 MiB batches in pinned memory
(.pin_memory(), what DataLoader(pin_memory=True) gives), copied with non_blocking=True: DMA at
full PCIe speed, asynchronous for the CPU."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, MIB = 20, 64
n = MIB * 2**20 // 4
batches = [torch.empty(n).fill_(i).pin_memory() for i in range(STEPS)]  # pinned (cudaHostAlloc)
w = torch.randn(2048, 2048, device="cuda")
for b in batches:
    g = b.to("cuda", non_blocking=True)         # pinned H2D copy
    y = (g[: 2048 * 2048].view(2048, 2048) @ w).relu_().sum()
torch.cuda.synchronize()
fact(h2d_pinned_bytes=STEPS * n * 4, h2d_copies=STEPS, host_addr=batches[0].data_ptr(),
     pinned_alloc_bytes=n * 4, fills=[float(i) for i in range(STEPS)], batch_bytes=n * 4)
