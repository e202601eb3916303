# memphases.py - function tracing and memory sampling on the GPU: a bf16 training loop whose
# device memory goes through known phases, and a Python function traced from outside. The check
# (pyhooks_check.py) runs it under `apx analyze --trace-functions memaug:augment
# --memory-sampling 10` and compares apx's numbers with torch's own, printed last as one JSON
# line (PHASES {...}): torch.cuda.max_memory_allocated / max_memory_reserved at the end, the
# allocated bytes held in each phase (one training step first, so that the optimizer's state
# is held in every phase), and the calls of augment() with their own durations.
import json
import sys
import time

import torch

from memaug import augment   # traced as memaug:augment (a script's own functions are __main__'s)


def main():
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(),
                                torch.nn.Linear(8192, 2048)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    calls, held = [], []
    x = torch.randn(256, 2048, device=dev)

    def train_step(xb):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(xb).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    train_step(x)                                   # the optimizer's state, from here on
    for phase, mib in enumerate((0, 1024, 3072, 512)):
        ballast = torch.empty(mib << 20, dtype=torch.uint8, device=dev) if mib else None
        torch.cuda.synchronize()
        held.append(torch.cuda.memory_allocated())
        t_end = time.perf_counter() + 0.6            # each phase lasts >= 6 samples at 10 Hz
        while time.perf_counter() < t_end:
            t0 = time.perf_counter_ns()
            xb = augment(x)
            calls.append(time.perf_counter_ns() - t0)
            train_step(xb)
        torch.cuda.synchronize()
        del ballast
    time.sleep(0.3)
    print("PHASES " + json.dumps({
        "max_allocated": torch.cuda.max_memory_allocated(),
        "max_reserved": torch.cuda.max_memory_reserved(),
        "held": held, "augment_ns": calls}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
