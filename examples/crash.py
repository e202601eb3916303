"""crash.py - the program dies: `crash.py segv` segfaults, `crash.py kill` SIGKILLs itself,
after about 2.5 s of GPU work. The trace must stay readable up to the last periodic flush
(1 s), and after a SIGSEGV it says which signal."""
import ctypes
import os
import signal
import sys
import time

from _common import fact, need_cuda

torch = need_cuda()
how = sys.argv[1] if len(sys.argv) > 1 else "segv"
x = torch.randn(2048, 2048, device="cuda")
t0, steps = time.time(), 0
while time.time() - t0 < 2.5:
    x = (x @ x).tanh_()
    torch.cuda.synchronize()
    steps += 1
fact(steps=steps, how=how)
sys.stdout.flush()
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
ctypes.string_at(0)                             # SIGSEGV
