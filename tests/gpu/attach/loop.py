"""loop.py MODE [--seconds S] [--log FILE] [--profile-steps N] [--profiler-first] [--batch B]
[--seq T] [--cpus LIST] - a long-running
PyTorch program for tests/gpu/attach/check.py to attach to: MODE train (a bf16-autocast
transformer trained with AdamW) or infer (the same model under no_grad, batches of token ids).
Each step ends with torch.cuda.synchronize() and its (start, end) CLOCK_MONOTONIC ns go to the
--log JSON at exit, so the checker can split step times into before / during / after an
attach and count the trace's kernels step by step. --profile-steps N: torch.profiler over N
steps after the warm-up, the kernels of each step written to the log instead (the reference
the attached trace is compared with). --profiler-first: one torch.profiler step first (CUPTI
is then held by Kineto for the process's life: an attach must be refused). --batch/--seq: the
batch's shape (default 16 x 256: host-bound; 32 x 512 keeps the GPU busy). --cpus 4,5: run on
those CPUs only (the checker pins every process it compares to the same ones)."""
import argparse
import json
import time

import torch
import torch.nn as nn


def model(d=512, layers=6):
    layer = nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, dropout=0.0)
    return nn.Sequential(nn.Embedding(8192, d), nn.TransformerEncoder(layer, layers),
                         nn.Linear(d, 8192)).cuda()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "infer"])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--log", default="loop.json")
    ap.add_argument("--profile-steps", type=int, default=0)
    ap.add_argument("--profiler-first", action="store_true")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--cpus", default="")
    a = ap.parse_args()
    if a.cpus:
        __import__("os").sched_setaffinity(0, {int(c) for c in a.cpus.split(",")})
    torch.manual_seed(0)
    m = model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    x = torch.randint(0, 8192, (a.batch, a.seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            if a.mode == "train":
                loss = nn.functional.cross_entropy(m(x).flatten(0, 1).float(), x.flatten())
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            else:
                with torch.no_grad():
                    m(x).argmax(-1)
        torch.cuda.synchronize()

    for _ in range(10):
        step()
    if a.profiler_first:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
            step()
    log = {"mode": a.mode, "pid": __import__("os").getpid(), "steps": []}
    if a.profile_steps:
        kinds = []
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
            for _ in range(a.profile_steps):
                step()
        for e in p.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                kinds.append(e.name)
        log["profiler_kernels"] = kinds
        log["profiler_steps"] = a.profile_steps
    else:
        print("ready", flush=True)
        end = time.monotonic() + a.seconds
        while time.monotonic() < end:
            t0 = time.monotonic_ns()
            step()
            log["steps"].append([t0, time.monotonic_ns()])
    with open(a.log, "w") as fh:
        json.dump(log, fh)
    print("done", len(log["steps"]), flush=True)


if __name__ == "__main__":
    main()
