"""launch_bound_fixed.py - FIX of launch_bound.py: the step is captured once as a CUDA graph
and replayed, so one launch per step replaces 100 (the kernels still run, back to back)."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS, OPS = 200, 50
x = torch.randn(256, device="cuda")
static = x.clone()


def step(t):
    for _ in range(OPS):
        t = t * 1.0001 + 0.0001
    return t


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):                      # warm up outside the capture
    step(static)
torch.cuda.current_stream().wait_stream(s)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = step(static)
for _ in range(STEPS):
    graph.replay()
    static.copy_(out)
torch.cuda.synchronize()
fact(steps=STEPS, graph_replays=STEPS)
