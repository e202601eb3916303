"""uvm_fixed.py - FIX of uvm_migrations.py: the data lives in device memory and the CPU's
values are sent with one pinned copy per step; nothing migrates on demand."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, MIB = 5, 256
n = MIB * 2**20 // 4
host = torch.empty(n).pin_memory()
dev = torch.empty(n, device="cuda")
total = 0.0
for i in range(STEPS):
    host.fill_(float(i))
    dev.copy_(host, non_blocking=True)
    total += dev.sum().item()
fact(steps=STEPS, h2d_pinned_bytes=STEPS * n * 4)
