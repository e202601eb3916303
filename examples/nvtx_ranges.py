"""nvtx_ranges.py - NVTX ranges and a marker from PyTorch (torch.cuda.nvtx): 20 "step" ranges,
each around a matrix product, and one "done" marker. apx records them when the program runs
with NVTX_INJECTION64_PATH pointing at libcupti (apx analyze --nvtx sets it); apx report shows
the GPU time under each range."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS = 20
x = torch.randn(2048, 2048, device="cuda")
for _ in range(STEPS):
    torch.cuda.nvtx.range_push("step")
    x = x @ x
    x = x / x.norm()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
torch.cuda.nvtx.mark("done")
fact(nvtx_steps=STEPS, nvtx_marks=1)
