# workload.py - what libcalls_check.py runs under apx analyze: N steps of bf16 autocast work
# that PyTorch hands to cuBLAS and cuDNN - 2 Linear layers (GEMMs with bias), 1 bmm, 1 conv2d
# forward - then prints the counts it made (CALLS {"gemm": ..., "conv": ...}) and which
# cuBLAS/cuDNN symbols libtorch_cuda.so imports (SYMBOLS [...]), for the check.
import json
import os
import subprocess
import sys

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
dev = torch.device("cuda")
lin = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.Linear(4096, 1024)).to(dev)
conv = torch.nn.Conv2d(64, 64, 3, padding=1).to(dev)
x = torch.randn(256, 1024, device=dev)
a = torch.randn(16, 256, 64, device=dev)
b = torch.randn(16, 64, 256, device=dev)
img = torch.randn(16, 64, 56, 56, device=dev)
torch.backends.cudnn.benchmark = False
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    for _ in range(n):
        lin(x)
        torch.bmm(a, b)
        conv(img)
torch.cuda.synchronize()
print("CALLS " + json.dumps({"gemm": 3 * n, "conv": n}))
lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
try:
    out = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True,
                         text=True).stdout
    syms = sorted({ln.split()[-1].split("@")[0] for ln in out.splitlines()
                   if "cublas" in ln or "cudnn" in ln})
except OSError:
    syms = []
print("SYMBOLS " + json.dumps(syms))
