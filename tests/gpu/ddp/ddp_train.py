# ddp_train.py - a torchrun rank of a small bf16 transformer trained with DDP: the program of
# ddp_check.py (issue 34). Run as `torchrun --standalone --nproc_per_node=N ddp_train.py MODE
# [--steps S] [--sleep-ms MS]`. MODE:
#   ddp        DistributedDataParallel (bucketed all-reduces overlapped with backward)
#   nooverlap  the same model without DDP: after backward the gradients are all-reduced in
#              25 MiB buckets (DDP's size), none of it beside backward
#   straggler  ddp, with rank 1 sleeping --sleep-ms on the host before each step's forward
# Each step is an NVTX range ProfilerStep#N (what apx report takes as steps). Rank 0 prints
# "DDPSTEP mode ms_per_step steps" (the median over blocks of 10 steps after warm-up, between
# two synchronizations and barriers: no profiler inside when run plainly). --cpu: gloo on the
# CPU, fp32, for a smoke run of the program itself without a GPU.
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["ddp", "nooverlap", "straggler"])
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--sleep-ms", type=float, default=20.0)
ap.add_argument("--width", type=int, default=1024)
ap.add_argument("--cpu", action="store_true")
a = ap.parse_args()

for k, v in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"),
             ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29541")):
    os.environ.setdefault(k, v)
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
if a.cpu:
    dev = torch.device("cpu")
    dist.init_process_group("gloo")
else:
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
world = dist.get_world_size()
torch.manual_seed(0)

layer = nn.TransformerEncoderLayer(a.width, 8, 4 * a.width, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).to(dev)
if a.mode != "nooverlap":
    model = nn.parallel.DistributedDataParallel(model, device_ids=None if a.cpu else [local])
params = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.AdamW(params, lr=1e-4, **({} if a.cpu else {"fused": True}))
x = torch.randn(16, 256, a.width, device=dev)
BUCKET = 25 << 20                                   # DDP's default bucket_cap_mb


def allreduce_buckets():
    """The gradients all-reduced after backward, in DDP-sized buckets, in reverse order (as
    DDP's buckets fill)."""
    bucket, size = [], 0
    for p in reversed(params):
        bucket.append(p.grad)
        size += p.grad.numel() * p.grad.element_size()
        if size >= BUCKET:
            flush(bucket)
            bucket, size = [], 0
    if bucket:
        flush(bucket)


def flush(grads):
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for g in grads:
        g.copy_(flat[off:off + g.numel()].view_as(g))
        off += g.numel()


def step(i):
    if not a.cpu:
        torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
    if a.mode == "straggler" and rank == 1:
        time.sleep(a.sleep_ms / 1e3)
    opt.zero_grad(set_to_none=True)
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=not a.cpu):
        loss = model(x).float().square().mean()
    loss.backward()
    if a.mode == "nooverlap":
        allreduce_buckets()
    opt.step()
    if not a.cpu:
        torch.cuda.nvtx.range_pop()


def sync():
    if not a.cpu:
        torch.cuda.synchronize()
    dist.barrier()


n = 0
for _ in range(a.warmup):
    step(n)
    n += 1
sync()
blocks = []
while n < a.warmup + a.steps:
    t0 = time.perf_counter()
    k = min(10, a.warmup + a.steps - n)
    for _ in range(k):
        step(n)
        n += 1
    sync()
    blocks.append((time.perf_counter() - t0) / k * 1e3)
if rank == 0:
    print(f"DDPSTEP {a.mode} {statistics.median(blocks):.4f} {a.steps} world {world}",
          flush=True)
dist.destroy_process_group()
