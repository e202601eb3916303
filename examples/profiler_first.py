"""profiler_first.py - torch.profiler takes CUPTI before apx can (it starts before the first
CUDA use). apx must print one line naming the holder, write a trace saying so, and leave the
program untouched: torch.profiler still sees its GPU kernels."""
from torch.profiler import ProfilerActivity, profile

from _common import fact, need_cuda

torch = need_cuda()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    x = torch.randn(1024, 1024, device="cuda")
    for _ in range(10):
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
gpu = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
fact(profiler_gpu_events=len(gpu))
