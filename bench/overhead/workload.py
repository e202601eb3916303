"""workload.py [--reps R] - the timed training loops of the overhead benchmark (run.py), all in
one process: resnet (torchvision ResNet-18, batch 64, 224x224, SGD), transformer (6-layer
encoder, d=512, batch 32 x 256 tokens, AdamW) and launch (launch-bound: 100 tiny element-wise
kernels a step). After a warm-up, R repetitions each time every loop (workloads in a rotating
order) between two synchronizations and print "BENCH <workload> <rep> <seconds>". With
BENCH_TORCH_PROFILER=1 every timed loop runs inside its own torch.profiler session (CPU + CUDA
activities), as a user would profile it."""
import os
import sys
import time

import torch
import torchvision

reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
torch.manual_seed(0)
dev = "cuda"
steps_of = {"resnet": 25, "transformer": 25, "launch": 800}

rn = torchvision.models.resnet18().to(dev)
rn_opt = torch.optim.SGD(rn.parameters(), lr=0.01, momentum=0.9)
rn_x = torch.randn(64, 3, 224, 224, device=dev)
rn_y = torch.randint(0, 1000, (64,), device=dev)
lossf = torch.nn.CrossEntropyLoss()
tf = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True),
                                 6).to(dev)
tf_opt = torch.optim.AdamW(tf.parameters(), lr=1e-4)
tf_x = torch.randn(32, 256, 512, device=dev)
lb = [torch.randn(256, device=dev)]


def resnet():
    rn_opt.zero_grad(set_to_none=True)
    lossf(rn(rn_x), rn_y).backward()
    rn_opt.step()


def transformer():
    tf_opt.zero_grad(set_to_none=True)
    tf(tf_x).square().mean().backward()
    tf_opt.step()


def launch():
    t = lb[0]
    for _ in range(50):
        t = t * 1.0001 + 0.0001
    lb[0] = t


fns = {"resnet": resnet, "transformer": transformer, "launch": launch}
for f in fns.values():
    for _ in range(10):
        f()
torch.cuda.synchronize()
use_prof = os.environ.get("BENCH_TORCH_PROFILER") == "1"
names = list(fns)
for r in range(reps):
    for name in names[r % 3:] + names[:r % 3]:
        prof = None
        if use_prof:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        t0 = time.perf_counter()
        for _ in range(steps_of[name]):
            fns[name]()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if prof is not None:
            prof.__exit__(None, None, None)
        print(f"BENCH {name} {r} {dt:.6f}", flush=True)
