"""launch_bound.py - PROBLEM: launch-bound. Thousands of tiny element-wise kernels on a
256-element tensor: each runs ~2 us but costs ~5 us of CPU to launch, so the GPU is mostly
idle. Fixed variant: launch_bound_fixed.py (one CUDA graph per step)."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, OPS = 200, 50
x = torch.randn(256, device="cuda")
for _ in range(STEPS):
    for _ in range(OPS):
        x = x * 1.0001 + 0.0001                 # two tiny kernels
torch.cuda.synchronize()
fact(steps=STEPS, tiny_kernels=STEPS * OPS * 2)
