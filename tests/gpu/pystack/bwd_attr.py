"""bwd_attr.py - a program of tests/gpu/pystack run by bwd_check.py on the
GPU machine under `apx analyze --python-backward nvtx` and `--python-backward none`: a bf16 GPT
(6 layers, d512, T256, batch 16, fused AdamW), GPU-bound as written, whose backward pass
(autograd's engine thread, no Python frames) is about half of its GPU time. apx must give
>= 90 % of the GPU time launched without a Python stack the forward line that created it; the
lines marked `# APX-EXPECT: fwd` are the forward lines whose backward is largest.

    python3 bwd_attr.py [--steps N] [--warmup W]

Prints STEP_MS <median ms a step> as its last line."""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, LAYERS, T, BATCH, VOCAB = 512, 8, 6, 256, 16, 8192


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 4 * D)
        self.fc2 = nn.Linear(4 * D, D)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D // HEADS).transpose(1, 3).unbind(2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # APX-EXPECT: fwd
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, D))
        h = F.gelu(self.fc1(self.ln2(x)))  # APX-EXPECT: fwd
        return x + self.fc2(h)  # APX-EXPECT: fwd


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(T, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))  # APX-EXPECT: fwd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = GPT().cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, VOCAB, (BATCH, T), device="cuda")
    tgt = torch.randint(0, VOCAB, (BATCH, T), device="cuda")
    times = []
    for step in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, VOCAB).float(), tgt.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    print("LOSS %.6f" % loss.item())
    print("STEP_MS %.4f" % statistics.median(times), flush=True)


if __name__ == "__main__":
    main()
