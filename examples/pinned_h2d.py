"""pinned_h2d.py - FIX of pageable_h2d.py: the same 64 MiB copies from pinned memory
(.pin_memory(), non_blocking=True): DMA at full PCIe speed, asynchronous for the CPU."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, MIB = 20, 64
x = torch.randn(MIB * 2**20 // 4).pin_memory()  # pinned host memory (cudaHostAlloc)
w = torch.randn(2048, 2048, device="cuda")
for _ in range(STEPS):
    g = x.to("cuda", non_blocking=True)         # pinned H2D copy
    y = (g[: 2048 * 2048].view(2048, 2048) @ w).relu_().sum()
torch.cuda.synchronize()
fact(h2d_pinned_bytes=STEPS * x.numel() * 4, h2d_copies=STEPS, host_addr=x.data_ptr(),
     pinned_alloc_bytes=x.numel() * 4)
