"""rules_issue12.py MODE - small training loops that plant (or fix) the problems of the rules of
issue 12 item 5, for capture under `apx analyze` on the GPU machine (tests/gpu/rules_issue12.sh):
  foreach_off / foreach_fused   AdamW(foreach=False) vs AdamW(fused=True)
  zero_grad_keep / zero_grad_none   zero_grad(set_to_none=False) vs the default
  graph_recapture / graph_once  torch.cuda.graph captured every step vs once, replayed
  replica_kept / replica_del    a 1 GiB host tensor copied to the GPU and kept vs deleted
  loader_0 / loader_4           DataLoader(num_workers=0) vs num_workers=4, CPU work per sample
"""
import sys
import time

import torch
from torch import nn

mode = sys.argv[1]
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = True


def model():
    layers = []
    for _ in range(24):	# 48 parameter tensors
        layers += [nn.Linear(512, 512), nn.ReLU()]
    return nn.Sequential(*layers).to(dev)


def train(m, opt, steps, set_to_none=True):
    x = torch.randn(64, 512, device=dev)
    for _ in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        m(x).square().mean().backward()
        opt.step()
    torch.cuda.synchronize()


if mode in ("foreach_off", "foreach_fused"):
    m = model()
    kw = {"foreach": False} if mode == "foreach_off" else {"fused": True}
    train(m, torch.optim.AdamW(m.parameters(), lr=1e-4, **kw), 40)
elif mode in ("zero_grad_keep", "zero_grad_none"):
    m = model()
    train(m, torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True), 40,
          set_to_none=mode == "zero_grad_none")
elif mode in ("graph_recapture", "graph_once"):
    m = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(8)]).to(dev).eval()
    x = torch.randn(256, 1024, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):	# warm-up before capture
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.no_grad():
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)
        for _ in range(30):
            if mode == "graph_recapture":
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = m(x)
            g.replay()
            torch.cuda.synchronize()
elif mode in ("replica_kept", "replica_del"):
    host = torch.randn(256 * 1024 * 1024)	# 1 GiB
    gpu = host.to(dev)
    if mode == "replica_del":
        del host
    w = torch.randn(4096, 4096, device=dev)
    for _ in range(30):
        (w @ w).sum()
        torch.cuda.synchronize()
        time.sleep(0.1)	# a few CPU samples after the copy
elif mode in ("loader_0", "loader_4"):
    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 64 * 40

        def __getitem__(self, i):
            a = torch.randn(128, 128)
            for _ in range(8):	# CPU work per sample
                a = (a @ a).tanh()
            return a.flatten()[:512]

    m = model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    nw = 0 if mode == "loader_0" else 4
    dl = torch.utils.data.DataLoader(Slow(), batch_size=64, num_workers=nw, pin_memory=True,
                                     persistent_workers=nw > 0)
    for x in dl:
        x = x.to(dev, non_blocking=True)
        opt.zero_grad()
        m(x).square().mean().backward()
        opt.step()
    torch.cuda.synchronize()
else:
    sys.exit("unknown mode " + mode)
