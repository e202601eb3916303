"""programs.py CASE VARIANT [--steps N] - the development suite (tests/gpu/suite/run.py): training
and inference loops written apart from examples/, each with a planted problem ("planted") and
its fix ("fixed"), plus clean models ("clean": bench/overhead's bf16 ResNet-style CNN at
224x224, GPT at batch 64 and HuggingFace GPT-2: sizes at which the GPU, not the host, sets the
step time; and GPT at batch 16, bench/overhead's own size, where the host's per-op work shows
between kernels (GPU idle ~11 % of a step on the H200) without making the program launch-bound:
a clean program need not keep the GPU full. The CNN at 96x96 is not one: 70 % idle, it is
launch-bound, and CUDA graphs would rightly save most of that; and since 2026-12-07 two models
from libraries: HuggingFace BERT from its config and timm's efficientnet_b0, both bf16; and
"logged", a language model trained with a script's usual habits: DataLoader workers, gradient
clipping, a schedule, the loss read back every step; not yet captured: "vit", timm's ViT-S/16
with label smoothing, clipping and a cosine schedule, and "t5", a HuggingFace T5 encoder-decoder
from its config).
Matrix products may use TF32 (as most training scripts set), except in fp32_matmul's planted
variant; fixed variants do what a well-written program does besides the fix (copies on a side
stream ahead of their use), so that the planted problem is the only one. Host batches that
stand for a loader's output get new data before each copy (Refill: the copy count written into
their first and last elements once their previous copy is done; two buffers each, so the wait
is for a copy long done), so that only repeated_copy's planted variant copies unchanged pinned
bytes again: the collector fingerprints each copy's source, and a pinned buffer refilled with
new data is no repeat (a full 64 MiB refill would add host work that the planted variants do
not do). Prints "SUITE case variant ms_per_step steps" (median of 3 timed blocks
after warm-up; no profiler inside) and "RSS case variant bytes" (the resident set then).
The rule each case plants is in CASES.

python3 programs.py CASE paired [--pairs N] [--block S] [--min-block-ms M]: both variants'
steps built in one process (seeded alike) and warmed up, then 2N timed blocks in the order
planted, fixed, fixed, planted, planted, fixed, ... (so that a drift in time falls on both
alike), each of at least S steps and M ms, between two torch.cuda.synchronize() calls, after
2 untimed steps (more where the step's settle says so). Prints
  SUITEPAIR case <planted ms/step, median of its blocks> <fixed ms/step, median> <median of
            the N adjacent pairs' differences planted - fixed, ms/step> <N>
  PAIRS case <json: the N differences, ms/step, in block order>
  BLOCKS case <json: {"planted": [ms/step...], "fixed": [...]} in block order>
Why: on the H200 machine the same program's step time varies from process to process by up
to 1.8x (some processes run at ~55 % speed from start to end, while adjacent blocks of one
process agree within a few %), so a difference of two separate processes' times is as much
that spread as the planted problem's cost; within one process, seconds apart, it is the
problem's. run.py measures every case in PAIRABLE that way. A variant that sets process-global
state (TF32) sets it in its step's enter(), called before each of its blocks after defaults()
has reset what main() sets; a case whose variants cannot share a process is marked in
PAIRABLE with the reason (run.py times its variants in separate processes).

Cases (planted -> fixed):
  pageable       64 MiB batch copied from pageable memory -> pinned, prefetched on a side stream
  small_copies   256 per-sample .cuda() copies a step -> one copy of the stacked batch, prefetched
  sync_item      loss.item() after every micro-batch -> one .item() every 50 steps
  launch_bound   64 tiny Linear layers eager -> the step replayed from a CUDA graph
  loader         DataLoader(num_workers=0) with CPU work per sample -> num_workers=6
  fp32_matmul    fp32 4096x4096 matmuls -> TF32 tensor cores
  copy_overlap   each batch copied then computed on one stream -> next batch on a side stream
  sync_copy      y.cpu() of a 32 MiB result every step -> non_blocking into pinned memory on a
                 side stream
  repeated_copy  the same 64 MiB host tensor copied every step -> copied once
  foreach        AdamW(foreach=False) over 48 tensors -> AdamW(fused=True)
  zero_grad      zero_grad(set_to_none=False) -> set_to_none=True
  graph_recapture a CUDA graph captured every iteration -> captured once, replayed
  replica        a 1 GiB host tensor kept after its copy to the GPU -> deleted (a memory cost:
                 run.py records the RSS difference)
  host_stall     5 ms of host work (numpy) between steps -> none (done ahead)
  empty_cache    torch.cuda.empty_cache() after every step of a conv net whose batch size
                 varies -> none (the caching allocator keeps its blocks)
  ema_loop       an EMA of a bf16 transformer's weights (64 x 384 tokens a step: GPU-bound)
                 updated tensor by tensor in a Python loop every step (mul_, add_) ->
                 torch._foreach_lerp_ over the lists
  manual_sgd     a hand-written momentum SGD over a bf16 conv net's tensors, one at a time ->
                 the same update with torch._foreach_* ops
  loader_pinned  a DataLoader (6 workers) of 18 MiB image batches for a bf16 conv net, each
                 batch copied with .to("cuda") from pageable memory -> pin_memory=True and
                 .to("cuda", non_blocking=True) on a side stream one batch ahead (what apx
                 tune's pin_memory fix does, but the side stream)
Second styles of six classes (written after the held-out suite's scores, never from its
programs: the same problem classes, other code):
  mask_loss      a bf16 language model's loss over the non-padding tokens picked by boolean
                 indexing (logits[targets != pad]: a nonzero, a host sync) in each of 4
                 micro-batches -> cross_entropy(ignore_index=pad) on all tokens
  grad_zero_loop gradients zeroed by a loop over the parameters (p.grad.zero_()) before each
                 backward of a bf16 transformer -> p.grad = None
  adam_by_hand   Adam written out per tensor (mul_, add_, addcmul_, sqrt, addcdiv_) over a
                 bf16 transformer's weights -> the same update with torch._foreach_* ops
  cpu_augment    each batch augmented on the host with torch CPU ops (flip, crop, noise) before
                 its copy, in the step -> the same augmentation on the GPU (written as a
                 gpu-starvation case; the H100 capture showed the input class instead: every
                 idle gap ends in the batch's copy, which dataloader-workers models, naming the
                 augment line; relabelled after that capture)
  feature_columns a tabular model's 40 feature columns copied to the GPU one by one (.to(dev))
                 every step -> one pinned block of all columns, one copy on a side stream ahead
  checkpoint_kept a model on the GPU given its weights from a 1 GiB host state dict, which is
                 then kept (to resume from) -> deleted after loading (a memory cost, as replica)
More styles of seven classes (2026-12-07: fp32_convnet, varlen_server, gru_unrolled; late,
not yet captured: score_export, nonzero_per_sample, state_kept_layers, token_loader):
  fp32_convnet   an fp32 CNN with TF32 off for matmuls and cuDNN -> TF32 on for both
  varlen_server  a bf16 encoder serving requests of 8 lengths, empty_cache() after each -> none
  gru_unrolled   a GRU cell unrolled over 48 steps in Python, eager -> replayed from a CUDA graph
  score_export   4 chunks of 16384 candidates scored a step, each chunk's 16 MiB of scores
                 handed to numpy with .cpu().numpy() -> copied non_blocking into pinned
                 buffers on a side stream, read one step later after their events
  nonzero_per_sample a segmentation loss averaged over each image's foreground pixels found
                 with nonzero() image by image (16 syncs a step) -> one masked mean
  state_kept_layers checkpoint_kept with a 1 GiB state dict of 64 tensors of 16 MiB (none
                 32 MiB alone) kept after loading -> deleted (a memory cost, as replica)
  token_loader   a bf16 language model fed by a DataLoader that tokenizes each line in Python
                 (dict lookups, padding to 256 ids), num_workers=0 -> num_workers=4
"""
import argparse
import copy
import json
import math
import os
import statistics
import sys
import time

import torch
from torch import nn

CASES = {
    "pageable": "pageable-copy", "small_copies": "small-copies", "sync_item": "sync-frequency",
    "launch_bound": "launch-bound", "loader": "dataloader-workers", "fp32_matmul": "fp32-matmul",
    "copy_overlap": "copy-overlap", "sync_copy": "sync-copy", "repeated_copy": "repeated-copy",
    "foreach": "optimizer-foreach", "zero_grad": "zero-grad-memset",
    "graph_recapture": "graph-recapture", "replica": "redundant-replication",
    "host_stall": "gpu-starvation", "empty_cache": "allocator-churn",
    "ema_loop": "optimizer-foreach", "manual_sgd": "optimizer-foreach",
    "loader_pinned": "pageable-copy",
    # second styles of six classes (2026-12-07): the rules' models checked on programs written
    # differently from the first cases of their class
    "mask_loss": "sync-frequency", "grad_zero_loop": "zero-grad-memset",
    "adam_by_hand": "optimizer-foreach", "cpu_augment": "dataloader-workers",
    "feature_columns": "small-copies", "checkpoint_kept": "redundant-replication",
    # second styles of three more classes (2026-12-07, evening; not yet captured)
    "fp32_convnet": "fp32-matmul", "varlen_server": "allocator-churn",
    "gru_unrolled": "launch-bound",
    # more styles of four classes (2026-12-07, late; not yet captured)
    "score_export": "sync-copy", "nonzero_per_sample": "sync-frequency",
    "state_kept_layers": "redundant-replication", "token_loader": "dataloader-workers",
}
# The clean models (run.py): no planted problem, no finding of 1 % of a step expected. bert
# and effnet (2026-12-07): models from libraries, whose host work between launches (HF's
# Python per layer, a depthwise CNN's many small kernels) the first four do not have.
# logged, vit and t5 (2026-12-07, not yet captured): a training script's usual habits around
# a clean model (DataLoader workers, clipping, a schedule, loss.item() every step for the
# log); timm's ViT-S/16 with label smoothing, clipping and a cosine schedule; a HuggingFace T5
# encoder-decoder from its config.
CLEAN = ("resnet", "gpt", "hf", "gpt16", "bert", "effnet", "logged", "vit", "t5")
# Whether a case's planted and fixed variants can share one process (programs.py CASE paired):
# case -> (pairable, what was checked or handled / why not). Every case function was read for
# process-global state: torch flags, DataLoader workers and their start method, memory held.
PAIRABLE = {
    "pageable": (True, "separate buffers; the fixed prefetch in flight ends at the block's sync"),
    "small_copies": (True, "separate samples and pinned batches"),
    "sync_item": (True, "separate models and optimizers"),
    "launch_bound": (True, "the fixed variant's graph is its own; the planted runs eager"),
    "loader": (True, "both DataLoaders use the default start method (fork: the workers run "
                     "no CUDA); the fixed variant's 6 persistent workers go on with their 12 "
                     "prefetched batches after its block, then wait: the blocks of both "
                     "variants start with 12 more untimed steps (settle), in which the fixed "
                     "one drains them and the planted one leaves the workers time to finish "
                     "them (2 batches each, about 45 ms) away from its timed steps"),
    "fp32_matmul": (True, "TF32 (torch.backends.cuda.matmul.allow_tf32) is process-global and "
                          "differs between the variants: each step's enter() sets it before "
                          "each of its blocks"),
    "copy_overlap": (True, "separate pinned buffers, streams and refill state"),
    "sync_copy": (True, "separate output buffers, events and streams"),
    "repeated_copy": (True, "separate pinned weights (no profiler, so no fingerprint matters)"),
    "foreach": (True, "separate models and optimizers"),
    "zero_grad": (True, "separate models and optimizers"),
    "graph_recapture": (True, "separate graphs; each planted capture (torch.cuda.graph: "
                              "synchronize, gc.collect, empty_cache) also frees the fixed "
                              "variant's cached blocks, which its untimed steps allocate again"),
    "replica": (False, "the planted problem is memory held by the process (the 1 GiB host "
                       "tensor kept): in one process the fixed variant would run with it "
                       "held, and there is no step time to compare (both steps are the same "
                       "GEMM and sleep; suite-check compares no saving for it)"),
    "host_stall": (True, "the host work is in the planted step only"),
    "empty_cache": (True, "separate models and optimizers; each planted empty_cache() also "
                          "frees the fixed variant's cached blocks, which its untimed steps "
                          "before each block allocate again"),
    "ema_loop": (True, "separate models, EMA copies and optimizers"),
    "manual_sgd": (True, "separate models and momentum buffers"),
    "loader_pinned": (True, "separate models and DataLoaders, each with 6 persistent workers "
                            "forked (default start method, no CUDA in them) that prefetch 12 "
                            "batches: as loader, 12 untimed steps (settle) before each block "
                            "drain them; only the fixed variant has a pin-memory thread, whose "
                            "pinned blocks its allocator keeps"),
    "mask_loss": (True, "separate models, optimizers and batches"),
    "grad_zero_loop": (True, "separate models and optimizers"),
    "adam_by_hand": (True, "separate models and moment buffers"),
    "cpu_augment": (True, "separate models and host batches; the host work is in the planted "
                          "step only"),
    "feature_columns": (True, "separate columns and pinned batches"),
    "checkpoint_kept": (False, "the planted problem is memory held by the process (the host "
                               "checkpoint kept after loading it): as replica"),
    "fp32_convnet": (True, "TF32 for matrix products and cuDNN convolutions is process-global "
                           "and differs between the variants: each step's enter() sets both "
                           "before each of its blocks"),
    "varlen_server": (True, "separate models and requests; each planted empty_cache() also "
                            "frees the fixed variant's cached blocks, which its untimed steps "
                            "before each block allocate again"),
    "gru_unrolled": (True, "the fixed variant's graph is its own; the planted runs eager"),
    "score_export": (True, "separate models, candidates, pinned buffers, events and streams"),
    "nonzero_per_sample": (True, "separate models, optimizers and batches"),
    "state_kept_layers": (False, "the planted problem is memory held by the process (the "
                                 "host state dict kept after loading it): as replica"),
    "token_loader": (True, "separate models and DataLoaders; the fixed variant's 4 persistent "
                           "workers (fork, no CUDA in them) prefetch 8 batches: 8 untimed "
                           "steps (settle) before each block of either variant, as loader"),
}
dev = "cuda"


def defaults():
    """The process-global settings every variant starts from (matrix products may use TF32):
    main() sets them once; a paired run sets them again before each block, then the variant's
    step's enter() (if it has one) sets its own."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


def mlp(n=24, d=512):
    layers = []
    for _ in range(n):
        layers += [nn.Linear(d, d), nn.ReLU()]
    return nn.Sequential(*layers).to(dev)


class Refill:
    """New data in a reused host batch before each copy, as a loader refilling its pinned
    buffer gives: the copy count n written into its first and last elements, after the batch's
    previous copy (its event) is done. fill(b) before the copy, copied(b, ev) after."""

    def __init__(self):
        self.n, self.done = 0, {}

    def fill(self, b):
        ev = self.done.pop(b.data_ptr(), None)
        if ev is not None:
            ev.synchronize()
        self.n += 1
        flat = b.view(-1)
        flat[0] = flat[-1] = float(self.n)

    def copied(self, b, ev):
        self.done[b.data_ptr()] = ev


class Prefetch:
    """Host batches copied to the GPU on a side stream one step ahead of their use (pinned
    memory, non_blocking), refilled with new data before each copy: what a well-written input
    pipeline does."""

    def __init__(self, batches):
        self.batches, self.i, self.side, self.next = batches, 0, torch.cuda.Stream(), None
        self.refill = Refill()

    def _issue(self):
        b = self.batches[self.i % len(self.batches)]
        self.refill.fill(b)
        with torch.cuda.stream(self.side):
            x = b.to(dev, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(self.side)
        self.refill.copied(b, ev)
        self.i += 1
        return x, ev

    def get(self):
        x, ev = self.next or self._issue()
        torch.cuda.current_stream().wait_event(ev)
        x.record_stream(torch.cuda.current_stream())
        self.next = self._issue()
        return x


def train_step(m, opt, x, set_to_none=True):
    opt.zero_grad(set_to_none=set_to_none)
    m(x).square().mean().backward()
    opt.step()


def capture(m, x):
    """m(x) warmed up on a side stream, then captured in a CUDA graph (returned)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        m(x)
    return g


def case_pageable(fixed):
    host = torch.randn(16 << 20)                    # 64 MiB
    w = torch.randn(2048, 2048, device=dev)
    feed = Prefetch([host.pin_memory() for _ in range(2)]) if fixed else None

    def step():
        x = feed.get() if fixed else host.to(dev)
        (w @ w).sum() + x[:10].sum()
    return step


def case_small_copies(fixed):
    samples = [torch.randn(16384) for _ in range(256)]   # 64 KiB each
    w = torch.randn(1024, 1024, device=dev)

    feed = Prefetch([torch.stack(samples).pin_memory() for _ in range(2)]) if fixed else None

    def step():
        x = feed.get() if fixed else torch.stack([s.cuda() for s in samples])
        (x[:, :1024] @ w).relu().sum()
    return step


def case_sync_item(fixed):
    m = mlp(8, 4096)                                # GPU-bound: 60-70 us GEMMs, ~30 us of host
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    xs = [torch.randn(512, 4096, device=dev) for _ in range(8)]
    state = {"n": 0, "acc": torch.zeros((), device=dev)}

    def step():
        opt.zero_grad()
        for x in xs:                                # 8 micro-batches
            loss = m(x).square().mean()
            loss.backward()
            if fixed:
                state["acc"] += loss.detach()
            else:
                print_loss = loss.item()            # a host sync per micro-batch
                del print_loss
        opt.step()
        state["n"] += 1
        if fixed and state["n"] % 50 == 0:
            state["acc"].item()
    return step


def eager_or_graph(m, x, fixed):
    """Inference of m(x): eager (planted) or replayed from a CUDA graph (fixed)."""
    if fixed:
        return capture(m, x).replay

    def step():
        with torch.no_grad():
            m(x)
    return step


def case_launch_bound(fixed):
    m = nn.Sequential(*[nn.Linear(64, 64) for _ in range(64)]).to(dev).eval()
    return eager_or_graph(m, torch.randn(32, 64, device=dev), fixed)


class SlowSet(torch.utils.data.Dataset):
    def __init__(self, d):
        self.d = d

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        a = torch.randn(64, 64)
        for _ in range(4):
            a = (a @ a).tanh()
        return torch.randn(self.d) + a[0, 0]


def case_loader(fixed):
    # GPU-bound at batch 128 (the 2026-12-03 capture's 4096 wide MLP left the fixed variant's
    # Python between kernels exposed: gpu-starvation, 9 % of its 5 ms step)
    m = mlp(16, 8192)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    nw = 6 if fixed else 0
    it = iter(torch.utils.data.DataLoader(SlowSet(8192), batch_size=128, num_workers=nw,
                                          pin_memory=True, persistent_workers=nw > 0))

    def step():
        x = next(it).to(dev, non_blocking=True)
        train_step(m, opt, x)
    # paired runs (PAIRABLE): untimed steps before each block of either variant, as many as
    # the fixed variant's workers prefetch (DataLoader's default prefetch_factor 2 each)
    step.settle = 2 * 6
    return step


class TextSet(torch.utils.data.Dataset):
    """Lines of text tokenized in Python as a dataset's __getitem__ does it without a fast
    tokenizer: lower-case, split on spaces, each word cut into word pieces by greedy longest
    match against a piece vocabulary (WordPiece's algorithm, written in Python: a few dict
    lookups a character), the whole line tokenized, then truncated or padded to 256 ids."""

    words = [f"w{i}" for i in range(20000)]

    def __init__(self, n=4096, seq=256, words_per_line=160):
        import random
        rnd = random.Random(0)
        self.lines = [" ".join(rnd.choice(self.words) for _ in range(words_per_line)).title()
                      for _ in range(n)]
        pieces = ["w"] + [f"##{i:02d}" for i in range(100)] + [f"##{i}" for i in range(10)]
        self.vocab = {p: i + 1 for i, p in enumerate(pieces)}
        self.seq = seq

    def __len__(self):
        return 1 << 30

    def wordpiece(self, w):
        ids, i = [], 0
        while i < len(w):
            for j in range(len(w), i, -1):
                piece = w[i:j] if i == 0 else "##" + w[i:j]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    i = j
                    break
            else:
                ids.append(0)                       # unknown
                i += 1
        return ids

    def __getitem__(self, i):
        ids = [t for w in self.lines[i % len(self.lines)].lower().split(" ")
               for t in self.wordpiece(w)][:self.seq]
        return torch.tensor(ids + [0] * (self.seq - len(ids)))


def case_token_loader(fixed):
    # the data-loading class in a text style: a bf16 language model fed by a DataLoader whose
    # __getitem__ tokenizes a line in Python, num_workers=0 (the tokenizing on the main thread,
    # the GPU waiting) -> num_workers=4
    m = lm(20001, d=768)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    nw = 4 if fixed else 0
    it = iter(torch.utils.data.DataLoader(TextSet(), batch_size=64, num_workers=nw,
                                          pin_memory=True, persistent_workers=nw > 0))

    def step():
        x = next(it).to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = m(x).float()
        nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                    x[:, 1:].reshape(-1)).backward()
        opt.step()
    step.settle = 2 * 4
    return step


def case_fp32_matmul(fixed):
    def enter():                                    # process-global: again before each block
        torch.backends.cuda.matmul.allow_tf32 = fixed   # of a paired run
    enter()
    a = torch.randn(4096, 4096, device=dev)

    def step():
        b = a
        for _ in range(4):
            b = (b @ a) * 1e-3
        b.sum()
    step.enter = enter
    return step


def case_copy_overlap(fixed):
    hosts = [torch.randn(32 << 20).pin_memory() for _ in range(2)]   # 128 MiB each
    w = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    state = {"i": 0, "next": None, "ev": None}
    refill = Refill()

    def copy(b, stream):                            # new data in b, then b to the GPU
        refill.fill(b)
        x = b.to(dev, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record(stream)
        refill.copied(b, ev)
        return x, ev

    def compute(x):
        y = w
        for _ in range(6):
            y = y @ w
        return y.sum() + x[:10].sum()

    def step():
        i = state["i"]
        state["i"] += 1
        if not fixed:
            compute(copy(hosts[i % 2], torch.cuda.current_stream())[0])
            return
        if state["next"] is None:
            with torch.cuda.stream(side):
                state["next"], state["ev"] = copy(hosts[i % 2], side)
        torch.cuda.current_stream().wait_event(state["ev"])
        x = state["next"]
        x.record_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):               # the next batch while this one computes
            state["next"], state["ev"] = copy(hosts[(i + 1) % 2], side)
        compute(x)
    return step


def case_sync_copy(fixed):
    w = torch.randn(4096, 2048, device=dev)
    out = torch.empty(4096, 2048).pin_memory()
    ev, side = torch.cuda.Event(), torch.cuda.Stream()
    state = {"pending": False}

    def step():
        y = (w * 2).relu()
        for _ in range(8):
            y = (y @ w.T[:2048, :2048]).relu() * 1e-3
        if not fixed:
            y.cpu()                                 # blocks until the GPU is done
            return
        if state["pending"]:
            ev.synchronize()                        # last step's copy: long done
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):               # off the compute stream
            y.record_stream(side)
            out.copy_(y, non_blocking=True)
            ev.record(side)
        state["pending"] = True
    return step


def case_repeated_copy(fixed):
    weights = torch.randn(16 << 20).pin_memory()   # 64 MiB, the same every step
    dw = weights.to(dev)
    x = torch.randn(4096, 4096, device=dev)

    def step():
        wd = dw if fixed else weights.to(dev, non_blocking=True)
        (x @ x).sum() + wd[:10].sum()
    return step


def case_foreach(fixed):
    m = mlp(24, 2048)
    kw = {"fused": True} if fixed else {"foreach": False}
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, **kw)
    x = torch.randn(4096, 2048, device=dev)         # GPU-bound: ~100 us GEMMs
    return lambda: train_step(m, opt, x)


def case_zero_grad(fixed):
    m = mlp(24, 2048)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4096, 2048, device=dev)         # GPU-bound: ~100 us GEMMs
    return lambda: train_step(m, opt, x, set_to_none=fixed)


def case_graph_recapture(fixed):
    m = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(8)]).to(dev).eval()
    x = torch.randn(256, 1024, device=dev)
    state = {"g": capture(m, x)}

    def step():
        if not fixed:
            state["g"] = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(state["g"]):
                m(x)
        state["g"].replay()
    return step


def gemms(state):
    """The memory cases' step, GPU-bound: 16 TF32 GEMMs, ~5 ms. It keeps state (the data the
    program holds: a closure over w alone would free it)."""
    w = torch.randn(4096, 4096, device=dev)

    def step():
        for _ in range(16):
            (w @ w).sum()
    step.state = state
    return step


def case_replica(fixed):
    host = torch.randn(256 << 20)                   # 1 GiB
    state = {"gpu": host.to(dev)}
    if not fixed:
        state["host"] = host                        # fixed: freed on return
    del host
    return gemms(state)


def case_host_stall(fixed):
    m = mlp(8, 2048)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4096, 2048, device=dev)         # the GPU, not the host, sets the step
    import numpy as np
    rng = np.random.default_rng(0)

    def step():
        if not fixed:                               # preprocessing on the main thread
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.005:
                rng.standard_normal(4096).sort()
        train_step(m, opt, x)
    return step


def case_empty_cache(fixed):
    # a bf16 conv net whose batch size changes every step (the last, ragged batches of
    # several datasets): each size needs blocks of its own, which empty_cache() gives back
    m = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
                      nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                      nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    xs = [torch.randn(b, 3, 96, 96, device=dev) for b in (48, 56, 64, 40)]
    state = {"i": 0}

    def step():
        x = xs[state["i"] % len(xs)]
        state["i"] += 1
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().square().mean()
        loss.backward()
        opt.step()
        if not fixed:
            torch.cuda.empty_cache()                # gives every cached block back
    return step


def transformer(layers=8, d=512):
    layer = nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(dev)


def case_ema_loop(fixed):
    # the weights' exponential moving average that diffusion and self-supervised training
    # keep, updated after every optimizer step
    m = transformer()
    ema = copy.deepcopy(m).requires_grad_(False)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    ps, es = list(m.parameters()), list(ema.parameters())
    # 64 x 384 tokens: GPU-bound (at 32 x 128 the H100 capture of 2026-12-06 was host-bound as
    # a whole, GPU idle 64 %, and launch-bound rightly ranked above the EMA loop)
    x = torch.randn(64, 384, 512, device=dev)
    decay = 0.999

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().square().mean()
        loss.backward()
        opt.step()
        with torch.no_grad():
            if fixed:
                torch._foreach_lerp_(es, ps, 1 - decay)
            else:
                for e, p in zip(es, ps):
                    e.mul_(decay).add_(p, alpha=1 - decay)
    return step


def case_manual_sgd(fixed):
    # momentum SGD written out by hand (as in many research repositories)
    layers, c = [], 3
    for w in (32, 64, 64, 128, 128, 128, 256, 256, 256, 256):
        layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
        c = w
    m = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 100)).to(dev)
    params = [p for p in m.parameters()]
    bufs = [torch.zeros_like(p) for p in params]
    x = torch.randn(32, 3, 64, 64, device=dev)
    lr, mom = 0.01, 0.9

    def step():
        for p in params:
            p.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().logsumexp(1).mean()
        loss.backward()
        with torch.no_grad():
            if fixed:
                torch._foreach_mul_(bufs, mom)
                torch._foreach_add_(bufs, [p.grad for p in params])
                torch._foreach_add_(params, bufs, alpha=-lr)
            else:
                for p, b in zip(params, bufs):
                    b.mul_(mom).add_(p.grad)
                    p.add_(b, alpha=-lr)
    return step


class ImageSet(torch.utils.data.Dataset):
    """Decoded images as a dataset hands them over (3x112x112 fp32, 147 KiB each), cheap to
    make (a copy of one of 64 stored ones, its first and last values set to its index, so
    that no batch repeats another's bytes where the collector fingerprints a copy: at 64
    stored images every batch of 128 was the same, and repeated-copy rightly fired): the bytes
    of a batch, not the workers' CPU time, set what the loader costs."""

    def __init__(self, n=64, res=112):
        self.bank = torch.randn(n, 3, res, res)

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        img = self.bank[i % len(self.bank)].clone()
        img[0, 0, 0] = img[-1, -1, -1] = float(i)
        return img


def case_loader_pinned(fixed):
    # 128 images a batch: 18.4 MiB copied to the GPU every step. Planted: pageable, so the host
    # stages it (a blocking .to("cuda"), the GPU idle meanwhile). Fixed: the DataLoader's
    # pin-memory thread copies each batch into pinned memory while the GPU computes, and the
    # pinned copy runs on a side stream one batch ahead. The conv net's step (a few ms in bf16)
    # is meant to be shorter than the pageable copy (pageable-copy's saving, the copy less its
    # pinned time, above copy-overlap's, the kernel time that could hide it) and longer than
    # the pin thread's copy (the fixed variant GPU-bound): both to be checked on the capture
    layers, c = [], 3
    for w, stride in ((64, 2), (128, 2), (256, 2), (256, 1)):
        layers += [nn.Conv2d(c, w, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(w),
                   nn.ReLU()]
        c = w
    m = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 100)).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    it = iter(torch.utils.data.DataLoader(ImageSet(), batch_size=128, num_workers=6,
                                          pin_memory=fixed, persistent_workers=True))
    side, state = torch.cuda.Stream(), {"next": None}

    def issue():                                    # fixed: the next batch's copy, ahead
        b = next(it)
        with torch.cuda.stream(side):
            x = b.to("cuda", non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(side)
        return x, ev

    def step():
        if not fixed:
            x = next(it).to("cuda")                 # pageable: blocks while it is staged
        else:
            x, ev = state["next"] or issue()
            torch.cuda.current_stream().wait_event(ev)
            x.record_stream(torch.cuda.current_stream())
            state["next"] = issue()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().logsumexp(1).mean()
        loss.backward()
        opt.step()
    # paired runs (PAIRABLE): untimed steps before each block, as many as the workers prefetch
    step.settle = 2 * 6
    return step


def lm(vocab=8192, d=512, layers=6):
    """A small bf16 language model: embedding, transformer layers, output projection."""
    return nn.Sequential(nn.Embedding(vocab, d), transformer(layers, d),
                         nn.Linear(d, vocab)).to(dev)


def case_mask_loss(fixed):
    # 4 micro-batches of 16 x 512 tokens, width 1024: GPU-bound on the H100 machine, whose
    # host issues an eager op every 25-35 us traced (at 16 x 256, width 512, the capture of
    # 2026-12-07 was host-bound: GPU busy 28 %); a quarter of each sequence is padding
    pad, vocab = 0, 8192
    m = lm(vocab, d=1024)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    xs = [torch.randint(1, vocab, (16, 512), device=dev) for _ in range(4)]
    for x in xs:
        x[:, 384:] = pad
    ys = [x.roll(-1, 1) for x in xs]

    def step():
        opt.zero_grad(set_to_none=True)
        for x, y in zip(xs, ys):                    # 4 micro-batches
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = m(x).float()
            if fixed:
                loss = nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1),
                                                   ignore_index=pad)
            else:
                keep = y != pad                     # boolean indexing: a nonzero, a sync
                loss = nn.functional.cross_entropy(logits[keep], y[keep])
            loss.backward()
        opt.step()
    return step


def case_grad_zero_loop(fixed):
    # 32 x 256 tokens, width 1024: GPU-bound on the H100 machine (16 x 128 at width 512 was
    # host-bound there, GPU busy 20 %)
    m = transformer(6, 1024)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(32, 256, 1024, device=dev)

    def step():
        for p in m.parameters():                    # what older training loops do by hand
            if fixed:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().square().mean()
        loss.backward()
        opt.step()
    return step


def case_adam_by_hand(fixed):
    # 32 x 256 tokens, width 1024: the model's part GPU-bound on the H100 machine (32 x 128
    # at width 512 was host-bound there, GPU busy 22 %, so launch-bound came first); the
    # per-tensor update stays a long row of small kernels, the planted problem
    m = transformer(6, 1024)
    ps = list(m.parameters())
    ms_, vs = [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]
    x = torch.randn(32, 256, 1024, device=dev)
    lr, b1, b2, eps, state = 1e-4, 0.9, 0.999, 1e-8, {"t": 0}

    def step():
        for p in ps:
            p.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().square().mean()
        loss.backward()
        state["t"] += 1
        c1, c2 = 1 - b1 ** state["t"], 1 - b2 ** state["t"]
        gs = [p.grad for p in ps]
        with torch.no_grad():
            if fixed:
                torch._foreach_mul_(ms_, b1)
                torch._foreach_add_(ms_, gs, alpha=1 - b1)
                torch._foreach_mul_(vs, b2)
                torch._foreach_addcmul_(vs, gs, gs, value=1 - b2)
                den = torch._foreach_sqrt(vs)
                torch._foreach_div_(den, math.sqrt(c2))
                torch._foreach_add_(den, eps)
                torch._foreach_addcdiv_(ps, ms_, den, value=-lr / c1)
            else:
                for p, g, mt, vt in zip(ps, gs, ms_, vs):
                    mt.mul_(b1).add_(g, alpha=1 - b1)
                    vt.mul_(b2).addcmul_(g, g, value=1 - b2)
                    den = (vt.sqrt() / math.sqrt(c2)).add_(eps)
                    p.addcdiv_(mt, den, value=-lr / c1)
    return step


def augment(b):
    """Random flips, a random 96x96 crop padded back to 112x112 and noise: torch ops on b's
    device (the host's CPUs for a host batch)."""
    flip = torch.rand(b.shape[0], device=b.device) < 0.5
    b = torch.where(flip[:, None, None, None], b.flip(3), b)
    i, j = (int(v) for v in torch.randint(0, 17, (2,)))
    b = nn.functional.pad(b[:, :, i:i + 96, j:j + 96], (8, 8, 8, 8))
    return b + 0.05 * torch.randn_like(b)


def case_cpu_augment(fixed):
    layers, c = [], 3
    for w in (64, 128, 256, 256):
        layers += [nn.Conv2d(c, w, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(w),
                   nn.ReLU()]
        c = w
    m = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 100)).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    # 4 host batches of 256 images: at 32 the fixed variant was launch-bound on the H100 (GPU
    # busy 29 %, 119 launches a step of 3.1 ms); 8x the images keep the GPU the slower side
    bank = torch.randn(4, 256, 3, 112, 112)
    gbank = bank.to(dev)
    state = {"i": 0}

    def step():
        k = state["i"] % len(bank)
        state["i"] += 1
        if fixed:
            x = augment(gbank[k])                   # the same ops on the GPU
        else:
            x = augment(bank[k]).to(dev)            # on the main thread, the GPU waiting
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x).float().logsumexp(1).mean()
        loss.backward()
        opt.step()
    return step


def case_feature_columns(fixed):
    # 40 columns of 8192 rows (32 KiB each) a batch, from a table held in host memory
    rows, ncol = 8192, 40
    table = [torch.randn(rows) for _ in range(ncol)]
    m = mlp(4, 1024)
    proj = nn.Linear(ncol, 1024).to(dev)
    feed = Prefetch([torch.stack(table, 1).pin_memory() for _ in range(2)]) if fixed else None

    def step():
        if fixed:
            x = feed.get()
        else:
            x = torch.stack([c.to(dev) for c in table], 1)
        with torch.no_grad():
            m(proj(x)).sum()
    return step


def resumed(m, fixed):
    """m's weights loaded from a host state dict (as torch.load(..., map_location="cpu")
    gives), each tensor copied host -> device; the planted program keeps the dict to resume
    from, the fixed one frees it on return. The memory cases' GPU-bound step over m."""
    ckpt = {k: torch.randn(v.shape) for k, v in m.state_dict().items()}
    m.load_state_dict(ckpt)
    state = {"model": m}
    if not fixed:
        state["ckpt"] = ckpt
    del ckpt
    return gemms(state)


def case_checkpoint_kept(fixed):
    # a resume: the model built on the GPU, then its weights loaded from a host state dict
    return resumed(nn.Sequential(nn.Embedding(1 << 18, 1024),
                                 nn.Linear(1024, 1024)).to(dev), fixed)     # 1 GiB


def case_state_kept_layers(fixed):
    # checkpoint_kept's problem in a model of many tensors: 64 layers of 2048 x 2048 fp32
    # weights (16 MiB each, 1 GiB in all: none of them alone 32 MiB, the size above which
    # glibc hands a freed buffer back to the system)
    return resumed(nn.Sequential(*[nn.Linear(2048, 2048, bias=False)
                                   for _ in range(64)]).to(dev), fixed)


def clean_effnet():
    """timm's efficientnet_b0 (depthwise convolutions, squeeze-excite: many small kernels),
    channels_last, bf16 autocast training on 128 images of 224x224."""
    import timm
    m = timm.create_model("efficientnet_b0", pretrained=False).to(dev)
    m = m.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(128, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(m(x).float(), y)
        loss.backward()
        opt.step()
    return step


class TokenSet(torch.utils.data.Dataset):
    """Random token sequences, as a tokenized corpus hands them out (cheap to make: the
    workers keep ahead)."""
    def __init__(self, vocab, seq):
        self.vocab, self.seq = vocab, seq

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(1, self.vocab, (self.seq + 1,), generator=g)


def clean_logged():
    """A language model trained the way most scripts are written: batches from a DataLoader
    (4 workers, pinned, copied non_blocking), bf16 autocast, gradient clipping, fused AdamW, a
    learning-rate schedule and the loss read back every step for the log (loss.item(): one
    sync a step). 16 x 512 tokens, width 1024: GPU-bound on the H100 machine."""
    vocab = 8192
    m = lm(vocab, d=1024)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / 100))
    it = iter(torch.utils.data.DataLoader(TokenSet(vocab, 512), batch_size=16, num_workers=4,
                                          pin_memory=True, persistent_workers=True))
    log = []

    def step():
        b = next(it).to(dev, non_blocking=True)
        x, y = b[:, :-1], b[:, 1:]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = m(x)
        loss = nn.functional.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        log.append(loss.item())
    return step


def clean_vit():
    """timm's vit_small_patch16_224 trained as image scripts often are: bf16 autocast, label
    smoothing, gradient clipping, fused AdamW with a cosine schedule, 256 images of 224x224
    already on the GPU (GPU-bound)."""
    import timm
    m = timm.create_model("vit_small_patch16_224", pretrained=False).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.05, fused=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10000)
    x = torch.randn(256, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (256,), device=dev)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = crit(m(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
    return step


def clean_t5():
    """An encoder-decoder: HuggingFace T5ForConditionalGeneration from a config (6 + 6 layers,
    width 768), bf16 autocast, 128 sources of 256 tokens and targets of 128, fused AdamW. At 32
    sources it was host-bound on the H200 (GPU busy 40 % of a step, 2,272 kernels a step):
    128 makes it GPU-bound, as a clean model must be (its committed trace is of 32 until it is
    captured again: known-misses.txt)."""
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(d_model=768, d_kv=64, d_ff=3072, num_layers=6, num_decoder_layers=6,
                   num_heads=12, vocab_size=32128, decoder_start_token_id=0,
                   pad_token_id=0)
    m = T5ForConditionalGeneration(cfg).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    src = torch.randint(1, cfg.vocab_size, (128, 256), device=dev)
    tgt = torch.randint(1, cfg.vocab_size, (128, 128), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(input_ids=src, labels=tgt).loss
        loss.backward()
        opt.step()
    return step


def clean(name):
    if name == "effnet":
        return clean_effnet()
    if name == "logged":
        return clean_logged()
    if name == "vit":
        return clean_vit()
    if name == "t5":
        return clean_t5()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                    "bench", "overhead"))
    import programs as bench                        # the bf16 models of bench/overhead
    models = {"resnet": ("resnet", {"res": 224}), "gpt": ("gpt", {"batch": 64}), "hf": ("hf", {}),
              "gpt16": ("gpt", {"batch": 16}), "bert": ("bert", {})}
    fn, size = models[name]
    return getattr(bench, fn)(**size)


def build(case, variant):
    """One variant's step, built as its own process would build it (same seed, defaults)."""
    torch.manual_seed(0)
    defaults()
    if variant == "clean":
        return clean(case)
    return globals()["case_" + case](variant == "fixed")


def case_fp32_convnet(fixed):
    # an fp32 CNN trained by a script that asked for exact fp32 (TF32 off for matrix products
    # and cuDNN convolutions alike): the convolutions, not GEMMs, are most of its GPU time
    def enter():                                    # process-global: again before each block
        torch.backends.cuda.matmul.allow_tf32 = fixed   # of a paired run
        torch.backends.cudnn.allow_tf32 = fixed
    enter()

    def block(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
    m = nn.Sequential(block(3, 64, 1), block(64, 128, 2), block(128, 256, 2),
                      block(256, 512, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(512, 100)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, foreach=True)
    x = torch.randn(64, 3, 128, 128, device=dev)
    y = torch.randint(0, 100, (64,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    step.enter = enter
    return step


def case_varlen_server(fixed):
    # an inference server for a bf16 encoder: requests of varying length (padded to a
    # multiple of 32), and torch.cuda.empty_cache() after each one "to leave memory to the
    # other tenants": every length needs blocks of its own, which the allocator must then ask
    # cudaMalloc for again. 128 sequences a request keep it GPU-bound on the H200 (at 32 the
    # host's ~30 us an eager op set the pace and launch-bound ranked first)
    m = transformer(6, 768).eval()
    lens = [96, 224, 160, 512, 320, 128, 448, 256]
    reqs = [torch.randn(128, n, 768, device=dev) for n in lens]
    state = {"i": 0}

    def step():
        x = reqs[state["i"] % len(reqs)]
        state["i"] += 1
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            m(x).float().mean(1)
        if not fixed:
            torch.cuda.empty_cache()
    return step


class GRUScan(nn.Module):
    """A GRU cell unrolled over the time steps in Python, as sequence scorers written before
    nn.GRU was fast enough, or that need per-step logic, do: ~10 small kernels a time step."""

    def __init__(self, d, h, t):
        super().__init__()
        self.cell, self.out, self.h, self.t = nn.GRUCell(d, h), nn.Linear(h, 1), h, t

    def forward(self, x):
        h = x.new_zeros(x.shape[0], self.h)
        for i in range(self.t):
            h = self.cell(x[:, i], h)
        return self.out(h)


def case_gru_unrolled(fixed):
    m = GRUScan(128, 256, 48).to(dev).eval()
    return eager_or_graph(m, torch.randn(64, 48, 128, device=dev), fixed)


def case_score_export(fixed):
    # a ranking service scoring 4 chunks of 16384 candidates a step with a bf16 MLP and handing
    # each chunk's 256 scores a candidate (16 MiB, fp32) to numpy with .cpu().numpy(): each
    # copy into pageable memory blocks the host until the chunk is done and staged out. Fixed:
    # each chunk copied non_blocking into a pinned buffer on a side stream, two sets of buffers
    # used in turn, a set read by numpy two steps later, after its events (the host runs a step
    # ahead of the GPU: one step later, the last chunk's copy is still queued and each step
    # would wait for the GPU to drain)
    m = nn.Sequential(*[x for _ in range(6) for x in (nn.Linear(2048, 2048), nn.GELU())],
                      nn.Linear(2048, 256)).to(dev).eval()
    chunks = [torch.randn(16384, 2048, device=dev) for _ in range(4)]
    bufs = [[torch.empty(16384, 256).pin_memory() for _ in chunks] for _ in range(2)]
    evs = [[torch.cuda.Event() for _ in chunks] for _ in range(2)]
    side = torch.cuda.Stream()
    state = {"k": 0, "filled": [False, False], "out": []}

    def step():
        s = state["k"] % 2
        state["k"] += 1
        if fixed and state["filled"][s]:
            for ev, buf in zip(evs[s], bufs[s]):    # two steps old: long copied
                ev.synchronize()
                state["out"] = [buf.numpy()]
        for i, x in enumerate(chunks):
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                y = m(x).float()
            if not fixed:
                state["out"] = [y.cpu().numpy()]    # blocks until the chunk is done
                continue
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                y.record_stream(side)
                bufs[s][i].copy_(y, non_blocking=True)
                evs[s][i].record(side)
        state["filled"][s] = fixed
    return step


class SegNet(nn.Module):
    """A small bf16 encoder-decoder that predicts a foreground score per pixel."""

    def __init__(self, c=96):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(c, c, 3, stride=2, padding=1), nn.ReLU(),
                                 nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose2d(2 * c, c, 2, stride=2), nn.ReLU(),
                                 nn.Conv2d(c, 1, 1))

    def forward(self, x):
        return self.dec(self.enc(x)).squeeze(1)


def case_nonzero_per_sample(fixed):
    # a segmentation trainer whose loss is averaged over each image's foreground pixels, found
    # with nonzero() image by image (16 images: 16 host syncs a step, each waiting for the
    # forward to finish before the next image's loss is launched). Fixed: the same masked mean
    # for all images at once, with no data-dependent shape
    m = SegNet().to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    x = torch.randn(16, 3, 192, 192, device=dev)
    target = (torch.rand(16, 192, 192, device=dev) > 0.7).float()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pred = m(x).float()
        err = (pred - target).square()
        if fixed:
            fg = target > 0
            loss = ((err * fg).sum((1, 2)) / fg.sum((1, 2)).clamp(min=1)).mean()
        else:
            loss = 0
            for i in range(x.shape[0]):
                idx = (target[i] > 0).nonzero(as_tuple=True)    # a sync: its length
                loss = loss + err[i][idx].mean() / x.shape[0]
        loss.backward()
        opt.step()
    return step


def timed(step, n):
    """ms per step of n steps between two synchronizations."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


def paired(a):
    """Both variants in this process, blocks in the order P F F P P F ... (module docstring)."""
    ok, why = PAIRABLE[a.case]
    if not ok:
        sys.exit(f"programs.py: {a.case} is not pairable: {why}")
    steps = {v: build(a.case, v) for v in ("planted", "fixed")}

    def enter(v):                                   # process-global state of variant v
        defaults()
        e = getattr(steps[v], "enter", None)
        if e is not None:
            e()

    n = {}
    for v in steps:                                 # warm up both; size the blocks
        enter(v)
        for _ in range(a.warmup):
            steps[v]()
        probe = timed(steps[v], 3)
        n[v] = max(a.block, math.ceil(a.min_block_ms / max(probe, 1e-3)))
    ms = {"planted": [], "fixed": []}
    for i in range(a.pairs):
        for v in (("planted", "fixed"), ("fixed", "planted"))[i % 2]:
            enter(v)
            for _ in range(2 + getattr(steps[v], "settle", 0)):
                steps[v]()
            ms[v].append(timed(steps[v], n[v]))
    defaults()
    diffs = [p - f for p, f in zip(ms["planted"], ms["fixed"])]
    med = statistics.median
    print(f"SUITEPAIR {a.case} {med(ms['planted']):.4f} {med(ms['fixed']):.4f} "
          f"{med(diffs):.4f} {a.pairs}", flush=True)
    print(f"PAIRS {a.case} " + json.dumps([round(d, 4) for d in diffs]), flush=True)
    print(f"BLOCKS {a.case} " + json.dumps({v: [round(x, 4) for x in ms[v]] for v in ms}),
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("variant", choices=["planted", "fixed", "clean", "paired"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=6, help="paired: pairs of blocks")
    ap.add_argument("--block", type=int, default=20, help="paired: least steps a block")
    ap.add_argument("--min-block-ms", type=float, default=200,
                    help="paired: least time a block (more steps for fast steps)")
    a = ap.parse_args()
    if a.variant == "paired":
        if a.case not in PAIRABLE or a.pairs < 1 or a.block < 1:
            ap.error("paired needs a case of CASES, --pairs >= 1 and --block >= 1")
        paired(a)
        return
    step = build(a.case, a.variant)                 # case_fp32_matmul sets its own TF32
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    per, times = max(1, a.steps // 3), []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(per):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / per)
    times.sort()
    print(f"SUITE {a.case} {a.variant} {times[1] * 1e3:.4f} {a.warmup + 3 * per}", flush=True)
    with open("/proc/self/statm") as fh:           # the resident set after the steps
        print(f"RSS {a.case} {a.variant} {int(fh.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')}",
              flush=True)


if __name__ == "__main__":
    main()
