# one_rank.py - a torchrun rank that goes through NCCL on one GPU (or on each of N:
# nccl_check.py --nproc N; rank R > 0 writes LOG.rankR.json).
# Run as `torchrun --standalone --nproc_per_node=1 one_rank.py LOG.json` (or plainly: it sets
# the torchrun variables itself when they are missing). It does what DDP training does on the
# wire: a bf16 model's gradients all-reduced in buckets, plus all_gather, reduce_scatter and
# broadcast of several sizes, each timed with CUDA events around the call on the current
# stream (the same job, the same GPU). It writes every call it made to LOG.json:
# {"nccl_version", "world", "calls": [{"func", "count", "dtype", "bytes", "ms"}...]}, the
# numbers nccl_check.py compares against apx's COLLECTIVE records. With one rank NCCL copies
# the collectives without telling a profiler plugin, so the job also sends to itself through a
# one-rank communicator of its own (self_p2p.py), which NCCL runs as its p2p kernel.
import json
import os
import sys

import torch
import torch.distributed as dist

for k, v in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"),
             ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29533")):
    os.environ.setdefault(k, v)

log_path = sys.argv[1] if len(sys.argv) > 1 else "one_rank.json"
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
dist.init_process_group("nccl", device_id=dev)
world = dist.get_world_size()

calls = []


def timed(func, count, dtype, fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    esize = torch.tensor([], dtype=dtype).element_size()
    calls.append({"func": func, "count": count, "dtype": str(dtype).replace("torch.", ""),
                  "bytes": count * esize, "ms": start.elapsed_time(end)})


# DDP-like: a small bf16 MLP trained a few steps, its gradients all-reduced as one flat bucket
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                            torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(64, 1024, device=dev)
for step in range(5):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    timed("all_reduce", flat.numel(), flat.dtype, lambda: dist.all_reduce(flat))
    opt.step()
    opt.zero_grad(set_to_none=True)

for count in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
    for dtype in (torch.float32, torch.bfloat16):
        t = torch.ones(count, dtype=dtype, device=dev)
        timed("all_reduce", count, dtype, lambda: dist.all_reduce(t))
        out = torch.empty(count * world, dtype=dtype, device=dev)
        timed("all_gather", count, dtype, lambda: dist.all_gather_into_tensor(out, t))
        rs = torch.empty(count // world, dtype=dtype, device=dev)
        timed("reduce_scatter", count // world, dtype, lambda: dist.reduce_scatter_tensor(rs, t))
        timed("broadcast", count, dtype, lambda: dist.broadcast(t, 0))

if world == 1:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import self_p2p
    self_p2p.run(calls)

torch.cuda.synchronize()
ver = torch.cuda.nccl.version()
if dist.get_rank():                 # ranks 1.. of a several-GPU run: LOG.rankR.json
    log_path = "%s.rank%d.json" % (log_path[:-5] if log_path.endswith(".json") else log_path,
                                   dist.get_rank())
with open(log_path, "w") as f:
    json.dump({"nccl_version": ".".join(map(str, ver)) if isinstance(ver, tuple) else str(ver),
               "world": world, "calls": calls}, f)
dist.destroy_process_group()
print("ONE_RANK calls=%d nccl=%s" % (len(calls), ver))
