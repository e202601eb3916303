"""agree_workload.py - deterministic GPU work for the agreement check (agree.py): the same
kernels every run. With --torch-profiler FILE it runs under torch.profiler (CUDA activity)
and writes its Chrome trace to FILE; otherwise it is meant to run under `apx analyze`."""
import sys

import torch

prof_out = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--torch-profiler" else None


def work():
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    v = torch.randn(16 << 20, device="cuda")
    for _ in range(20):
        c = a @ b
        c = torch.relu(c)
        s = c.sum(dim=0)
        a.add_(s.mean() * 1e-6)
        v.mul_(1.0001).add_(0.5)
        v = torch.sin(v)
    torch.cuda.synchronize()


if prof_out:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        work()
    p.export_chrome_trace(prof_out)
else:
    work()
