"""metrics_workload.py [SECONDS_IDLE] - the program metrics_check.py samples with `apx analyze
--metrics`: three phases a PM sampler must tell apart, separated by idle gaps (sleep):
  memory: 50 x y = x * 2 on 1 GiB fp32 tensors (each reads 1 GiB and writes 1 GiB of DRAM),
  tensor: 40 x an 8192^3 bf16 matmul (tensor pipes),
  idle:   sleep between the phases (GPU idle).
It first waits 2 s after CUDA's start-up: the sampler's first trigger came 0.66 s after its
start on the H200 (src_pmsampling.c drops that first sample).
Prints one "PHASE name t0 t1" line per phase (CLOCK_MONOTONIC ns, the trace clock)."""
import sys
import time

import torch

idle = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
dev = torch.device("cuda")
x = torch.ones(256 << 20, device=dev)          # 1 GiB fp32
y = torch.empty_like(x)
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
torch.mul(x, 2, out=y)
torch.matmul(a, b)
torch.cuda.synchronize()
time.sleep(2.0)


def phase(name, fn, n):
    time.sleep(idle)
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    print(f"PHASE {name} {t0} {t1}", flush=True)


phase("memory", lambda: torch.mul(x, 2, out=y), 50)
phase("tensor", lambda: torch.matmul(a, b), 40)
time.sleep(idle)
print("PHASE end 0 0", flush=True)
