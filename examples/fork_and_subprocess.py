"""fork_and_subprocess.py - a process tree: a forked child that exits normally (it must not
touch the parent's trace) and an exec'd Python child that uses CUDA (it must get its own
trace file, FILE.<pid>)."""
import os
import subprocess
import sys

from _common import fact, need_cuda

torch = need_cuda()
x = torch.randn(1024, 1024, device="cuda")
for _ in range(20):
    x = (x @ x).tanh_()
torch.cuda.synchronize()
pid = os.fork()
if pid == 0:                                    # forked child: no CUDA, normal exit + atexit
    sum(range(100000))
    sys.exit(0)
_, st = os.waitpid(pid, 0)
child = subprocess.run([sys.executable, "-c",
                        "import torch; y = torch.ones(4096, device='cuda') * 2; "
                        "print('child', int(y.sum().item()))"], check=True)
for _ in range(20):
    x = (x @ x).tanh_()
torch.cuda.synchronize()
fact(forked_child_status=st, subprocess_children=1)
