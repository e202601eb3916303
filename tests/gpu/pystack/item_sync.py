"""item_sync.py - a program of tests/gpu/pystack (issue 32), run by pystack_check.py on the GPU
machine with and without `apx analyze`: a bf16 GPT (12 layers, d768, T512, batch 32, fused
AdamW), GPU-bound as written, whose training step reads its token accuracy back with `.item()`
every step (the marked line) and then does the step's Python bookkeeping (a running mean and a
log line, a few ms of host work) while the GPU, drained by the sync, waits: the classic
"metric .item() every step". apx's sync-frequency finding must name that line first. A first
version synchronized in every block (`if h.abs().amax() > 6:`): on an H100 that cost 1.9 % of
the step (the launch-bound program's GPU was starved anyway), which apx rightly did not call a
sync-frequency problem. The loop itself synchronizes only at the end of each timed block.

    python3 item_sync.py [--steps N] [--warmup W]

Prints STEP_MS <median ms a step> as its last line."""
import argparse
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, LAYERS, T, BATCH, VOCAB = 768, 12, 12, 512, 32, 16384


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
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, D))
        h = F.gelu(self.fc1(self.ln2(x)))
        return x + self.fc2(h)


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
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--block", type=int, default=10, help="steps between two synchronizations")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("item_sync.py: no CUDA GPU", file=sys.stderr)
        sys.exit(77)
    torch.manual_seed(0)
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    data = torch.randint(0, VOCAB, (4, BATCH, T + 1), device="cuda")

    history = []

    def bookkeeping(acc):
        """the step's Python work after the metric (a few ms): an exponentially weighted mean
        over the whole history, recomputed, and a log line"""
        history.append(acc)
        ema = 0.0
        for _ in range(200):
            for v in history[-200:]:
                ema = 0.99 * ema + 0.01 * v
        return f"step {len(history)} acc {acc:.4f} ema {ema:.4f}"

    def step(i):
        x, y = data[i % 4, :, :-1], data[i % 4, :, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        acc = (logits.argmax(-1) == y).float().mean().item()  # APX-EXPECT: sync
        bookkeeping(acc)

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    times = []
    for b in range(max(1, a.steps // a.block)):
        t0 = time.perf_counter()
        for i in range(a.block):
            step(b * a.block + i)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / a.block)
    print(f"STEP_MS {statistics.median(times):.3f}", flush=True)


if __name__ == "__main__":
    main()
