"""steady.py [SECONDS] - steady GPU work (a matmul loop) for SECONDS (default 4): used to check
`apx analyze --delay/--duration` (only the window's kernels are recorded) and `--level api`."""
import sys
import time

from _common import fact, need_cuda

torch = need_cuda()
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
x = torch.randn(2048, 2048, device="cuda")
t0, steps = time.time(), 0
while time.time() - t0 < secs:
    x = (x @ x).tanh_()
    torch.cuda.synchronize()
    steps += 1
fact(steps=steps, kernels=2 * steps, seconds=secs)
