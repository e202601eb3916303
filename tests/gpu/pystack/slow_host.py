"""slow_host.py - a program of tests/gpu/pystack run by pystack_check.py on the GPU
machine with and without `apx analyze`: a small bf16 GPT trained on text whose every batch goes
through textprep.tokenize(), a slow pure-Python tokenizer (about --tokenize-ms of CPU a step,
sized on this CPU at start). The GPU's own work a step is shorter than that, so it waits for
the host: apx's top host hotspot must be the marked line inside tokenize(), and the finding
that names the GPU's idle time (input-pipeline, gpu-starvation or dataloader-workers) must
name tokenize().

    python3 slow_host.py [--steps N] [--warmup W] [--tokenize-ms MS]

Prints TOKENIZE_MS (one batch, measured), then STEP_MS <median ms a step> as its last line."""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from textprep import VOCAB, make_corpus, tokenize, words_for

from tinygpt import GPT

D, HEADS, LAYERS, T, BATCH = 256, 4, 4, 256, 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--block", type=int, default=10, help="steps between two synchronizations")
    ap.add_argument("--tokenize-ms", type=float, default=7.0)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("slow_host.py: no CUDA GPU", file=sys.stderr)
        sys.exit(77)
    torch.manual_seed(0)
    words = words_for(a.tokenize_ms, BATCH, T + 1)
    corpus = make_corpus(8 * BATCH, words)
    model = GPT(VOCAB, D, HEADS, LAYERS, T).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)

    def step(i):
        texts = corpus[(i % 8) * BATCH:(i % 8 + 1) * BATCH]
        ids = tokenize(texts, T + 1)
        batch = torch.tensor(ids).pin_memory().to("cuda", non_blocking=True)
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tokenize(corpus[:BATCH], T + 1)
    print(f"TOKENIZE_MS {(time.perf_counter() - t0) * 1e3:.2f} ({words} words a document)")
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
