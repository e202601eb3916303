"""pyalloc.py - a program of tests/gpu/pystack run by pyalloc_check.py on
the GPU machine under `apx analyze`: a few steps of a small bf16 MLP, around three planted
allocations on marked lines:

  - a large device tensor (4 GiB, the largest device allocation of the run by far: PyTorch's
    caching allocator asks the driver for exactly that segment, cudaMalloc -> cuMemAlloc_v2),
    the line marked `# APX-EXPECT: alloc`;
  - a pinned host buffer (256 MiB through pin_memory(): the caching host allocator's
    cudaHostAlloc -> cuMemHostAlloc), the line marked `# APX-EXPECT: pinned`;
  - a device tensor of twice the GPU's memory, which fails (torch.OutOfMemoryError, caught
    here: the program goes on and exits 0), the line marked `# APX-EXPECT: oom`.

apx's memory section must name the first two as the largest device and pinned allocations and
list the third as a failed allocation, each with its marked line; memory-capacity must name
the failed one's line.

    python3 pyalloc.py [--steps N]

Prints OOM_CAUGHT 1 when the planted allocation failed as planned, TOTAL_BYTES <the device's
memory>, and STEP_MS <median ms a step> last."""
import argparse
import statistics
import sys
import time

import torch


def load_weights():
    """the planted large device allocation"""
    return torch.empty(4 << 30, dtype=torch.uint8, device="cuda")  # APX-EXPECT: alloc


def staging_buffer():
    """the planted pinned allocation"""
    return torch.empty(256 << 20, dtype=torch.uint8).pin_memory()  # APX-EXPECT: pinned


def too_big(total):
    """the planted allocation that cannot succeed: twice the device's memory"""
    return torch.empty(2 * total, dtype=torch.uint8, device="cuda")  # APX-EXPECT: oom


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("pyalloc.py: no CUDA GPU", file=sys.stderr)
        sys.exit(77)
    torch.manual_seed(0)
    total = torch.cuda.get_device_properties(0).total_memory
    print(f"TOTAL_BYTES {total}", flush=True)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    weights = load_weights()
    weights.fill_(1)
    staging = staging_buffer()
    weights[: staging.numel()].copy_(staging, non_blocking=True)
    caught = 0
    try:
        too_big(total)
    except torch.cuda.OutOfMemoryError:
        caught = 1
    print(f"OOM_CAUGHT {caught}", flush=True)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    del weights, staging
    print(f"STEP_MS {statistics.median(times):.3f}", flush=True)


if __name__ == "__main__":
    main()
