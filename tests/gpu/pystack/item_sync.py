"""item_sync.py - a program of tests/gpu/pystack run by pystack_check.py on the GPU
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
import torch.nn.functional as F

from tinygpt import GPT

D, HEADS, LAYERS, T, BATCH, VOCAB = 768, 12, 12, 512, 32, 16384


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
    model = GPT(VOCAB, D, HEADS, LAYERS, T).cuda()
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
