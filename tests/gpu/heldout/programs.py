"""programs.py CASE VARIANT [--steps N] [--dry] - the held-out suite: PyTorch
training and inference loops written apart from the development suite (tests/gpu/suite) and
from the profiler's rules, each with one planted performance problem ("planted") and its hand
fix ("fixed"), plus two clean models ("clean"), so that the rules are scored on programs they
were not tuned on. HELD OUT: never tune a rule on these programs or on their traces.

Who calls it: tests/gpu/suite/run.py --programs tests/gpu/heldout/programs.py (through
`run.sh BUILD part I N --programs tests/gpu/heldout/programs.py`) times the variants without a
profiler and traces each under `apx analyze` on the GPU machine; the traces go to
tests/fixtures/heldout and tests/integration/suite-check.py --fixtures tests/fixtures/heldout
--report-only scores the profiler on them. run.py reads CASES (case -> the rule the planted
problem should be found by, the expected finding #1), CLEAN (the clean models) and PAIRABLE.

The command line and output are those of tests/gpu/suite/programs.py:
  programs.py CASE planted|fixed [--steps N] [--warmup W]   (CASE of CASES)
  programs.py CLEAN clean [--steps N] [--warmup W]          (CLEAN: llama, convnext)
print "SUITE case variant <ms per step: median of 3 timed blocks after warm-up> <steps>" and
"RSS case variant <bytes resident after the steps>";
  programs.py CASE paired [--pairs N] [--block S] [--min-block-ms M]
builds both variants in one process (seeded alike), warms both up, then times 2N blocks in the
order planted, fixed, fixed, planted, planted, fixed, ... (each of at least S steps and M ms,
after 2 untimed steps, more where the step's `settle` says so), and prints
  SUITEPAIR case <planted ms/step, median> <fixed ms/step, median> <median of the N adjacent
            pairs' differences planted - fixed> <N>
  PAIRS case <json: the N differences>
  BLOCKS case <json: {"planted": [ms/step...], "fixed": [...]}>
(the GPU machine's step times vary by up to 1.8x between processes, not between adjacent blocks
of one process). A variant that sets process-global state (TF32) sets it in its step's
enter(), called before each of its blocks.
A line "NOTE ..." says when a clean model fell back to a hand-written one (transformers, timm or
torchvision not importable).

--dry (or APX_SUITE_DRY=1): tiny sizes, 3 steps (paired: 1-step blocks, 2 pairs), on the CPU
where CUDA is absent; it only proves the Python runs. The GPU-only calls (streams, events,
pinned memory, CUDA graphs, empty_cache) go through the helpers below, which skip them
without CUDA; nothing else differs.

Written like user code, in several styles (plain loops, functions, classes, a Trainer, an
inference server, DataLoader pipelines). Every model trains or infers on synthetic data with
random weights. The fixed variants fix only the planted problem and are otherwise
well-written (bf16 autocast or TF32 as the planted one, fused optimizers, inputs prefetched on
a side stream from pinned memory), so that the measured difference is the planted problem's
cost. Host batches that stand for a loader's output are reused buffers given new sample ids
before each use (Ring), so that every step copies new bytes. Sizes were chosen for step times
of 5-50 ms on an H100 with the planted problem 10-60 % of the step (fp32-matmul more: bf16's
gain is that large), from estimates, not measurements.

Cases (planted -> fixed; expected rule in CASES):
  gpt_amax_guard        bf16 GPT (class style): `if x.abs().amax() > 1e4:` after every block
                        -> the peak kept on the GPU, checked every 100 steps
  det_nonzero_loss      conv detector (functions): per-image loss with torch.nonzero -> one
                        masked, batched loss
  multitask_tolist      Trainer, 4-task Transformer encoder: per micro-batch
                        `if not torch.isfinite(loss)` and losses.tolist() -> kept on the GPU,
                        read every 50 steps
  embed_export          bf16 encoder inference: token embeddings .cpu().numpy() every batch ->
                        non_blocking into pinned buffers on a side stream, read a step later
  audio_from_numpy      Conv1d audio net: torch.from_numpy(wave).to("cuda") -> a pinned
                        staging buffer, prefetched on a side stream
  loader_unpinned       VGG-style CNN: DataLoader(pin_memory=False) -> pin_memory=True,
                        prefetched on a side stream
  genes_same_stream     wide MLP on 20000-gene rows: pinned batch copied on the compute stream
                        right before use -> the next batch copied on a side stream
  dlrm_columns          DLRM-style recommender: 40 feature columns copied one by one -> packed
                        into two pinned tensors, prefetched
  gru_scorer            GRUCell loop (3 layers x 96 steps) inference -> a CUDA graph replay
  diffusion_ema         DDPM UNet: per-parameter EMA loop at two rates -> torch._foreach_*
  tabular_resmlp        48-block residual MLP training, eager -> the whole step in a CUDA graph
  text_tokenize_loader  1D-CNN text classifier: Python WordPiece per sample, num_workers=0 ->
                        num_workers=6
  resnet_fp32           ResNet-26 (bottlenecks), fp32 with TF32 off -> bf16 autocast
  ffn_fp32              transformer MLP blocks, fp32 with TF32 off -> bf16 autocast
  two_tower_adam        two-tower retrieval, big embedding tables: Adam(foreach=False) ->
                        Adam(fused=True)
  mixer_manual_sgd      MLP-Mixer: hand-written per-parameter SGD loop -> SGD(fused=True)
  autoencoder_zero_loop Mult-DAE recommender: `p.grad.zero_()` loop -> zero_grad(set_to_none)
  graph_per_request     bf16 encoder server: a CUDA graph captured per request -> captured once
  varlen_empty_cache    GPT over 3 length buckets a step: torch.cuda.empty_cache() every step ->
                        none
  host_state_kept       MLP server: the host state_dict kept after .to("cuda") (1 GiB) ->
                        dropped (a memory cost: not pairable)
  curriculum_numpy      tabular MLP: a numpy weighted sampler on the host every step -> the
                        same inverse-CDF sampling on the GPU
Clean: llama (HuggingFace LlamaForCausalLM from a config, bf16; a hand-written GPT without
transformers) and convnext (timm convnext_tiny, bf16, channels_last; torchvision's, or a
hand-written ConvNeXt, without timm)."""
import argparse
import collections
import contextlib
import json
import math
import os
import random
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CASES = {
    "gpt_amax_guard": "sync-frequency", "det_nonzero_loss": "sync-frequency",
    "multitask_tolist": "sync-frequency", "embed_export": "sync-copy",
    "audio_from_numpy": "pageable-copy", "loader_unpinned": "pageable-copy",
    "genes_same_stream": "copy-overlap", "dlrm_columns": "small-copies",
    "gru_scorer": "launch-bound", "diffusion_ema": "launch-bound",
    "tabular_resmlp": "launch-bound", "text_tokenize_loader": "dataloader-workers",
    "resnet_fp32": "fp32-matmul", "ffn_fp32": "fp32-matmul",
    "two_tower_adam": "optimizer-foreach", "mixer_manual_sgd": "optimizer-foreach",
    "autoencoder_zero_loop": "zero-grad-memset", "graph_per_request": "graph-recapture",
    "varlen_empty_cache": "allocator-churn", "host_state_kept": "redundant-replication",
    "curriculum_numpy": "gpu-starvation",
}
CLEAN = ("llama", "convnext")
# Whether a case's variants can share one process (programs.py CASE paired): case ->
# (pairable, what was checked or handled / why not). Each case was read for process-global
# state: torch flags, the caching allocator, DataLoader workers, memory held.
_SEPARATE = "separate models, optimizers and data"
PAIRABLE = {
    "gpt_amax_guard": (True, _SEPARATE),
    "det_nonzero_loss": (True, _SEPARATE),
    "multitask_tolist": (True, "separate Trainers (models, optimizers, histories)"),
    "embed_export": (True, "separate pinned buffers, streams, events and sinks"),
    "audio_from_numpy": (True, "separate numpy batches, pinned staging and streams"),
    "loader_unpinned": (True, "both DataLoaders fork 6 persistent workers that run no CUDA; "
                              "after a block a variant's workers refill their 12 prefetched "
                              "batches: every block starts with 12 untimed steps (settle)"),
    "genes_same_stream": (True, "separate pinned rings, streams and events"),
    "dlrm_columns": (True, "separate host columns, pinned staging and streams"),
    "gru_scorer": (True, "the fixed variant's graph and static input are its own"),
    "diffusion_ema": (True, "separate models and EMA copies"),
    "tabular_resmlp": (True, "separate models and optimizers; the graph (and its capturable "
                             "Adam) is the fixed variant's"),
    "text_tokenize_loader": (True, "the fixed variant's 6 persistent workers (fork, no CUDA) "
                                   "refill their 12 prefetched batches after its block: every "
                                   "block starts with 12 untimed steps (settle)"),
    "resnet_fp32": (True, "TF32 is process-global: both variants' enter() turn it off before "
                          "each block (the fix is autocast, not TF32)"),
    "ffn_fp32": (True, "TF32 as resnet_fp32: enter() before each block"),
    "two_tower_adam": (True, _SEPARATE),
    "mixer_manual_sgd": (True, _SEPARATE),
    "autoencoder_zero_loop": (True, _SEPARATE),
    "graph_per_request": (True, "separate graphs; each planted capture (synchronize, "
                                "empty_cache) also frees the fixed variant's cached blocks, "
                                "which its untimed steps allocate again"),
    "varlen_empty_cache": (True, "empty_cache is process-global: the planted variant's frees "
                                 "the fixed one's cached blocks, which its 2 untimed steps "
                                 "allocate again; the fixed variant never calls it"),
    "curriculum_numpy": (True, "the host sampling is in the planted step only"),
    "host_state_kept": (False, "the planted problem is host memory the process holds (1 GiB): "
                               "in one process the fixed variant would run with it held; both "
                               "steps are the same inference (run.py compares resident sets "
                               "of separate processes)"),
}

dev = "cuda" if torch.cuda.is_available() else "cpu"
CUDA = dev == "cuda"
DRY = False                                         # main() sets it (--dry, APX_SUITE_DRY=1)


# ---- the GPU-only calls, which a dry run without CUDA skips -------------------------------
def pick(full, tiny):
    """A case's sizes: full on the GPU machine, tiny in a dry run."""
    return tiny if DRY else full


def sync():
    if CUDA:
        torch.cuda.synchronize()


def pin(t):
    return t.pin_memory() if CUDA else t


def amp():
    """bf16 autocast; none on the CPU of torch < 2.0 (a dry run here), whose CPU autocast
    gives LayerNorm and GroupNorm bf16 inputs with fp32 weights."""
    if not CUDA and int(torch.__version__.split(".")[0]) < 2:
        return contextlib.nullcontext()
    return torch.autocast(dev, dtype=torch.bfloat16)


def fused():
    """The optimizer keyword a well-written CUDA program passes (fused kernels)."""
    return {"fused": True} if CUDA else {}


def side_stream():
    return torch.cuda.Stream() if CUDA else None


def on(stream):
    return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()


def record(stream=None):
    """An event recorded on stream (the current one by default); None without CUDA."""
    if not CUDA:
        return None
    ev = torch.cuda.Event()
    ev.record(stream)
    return ev


def wait(ev):
    if ev is not None:
        torch.cuda.current_stream().wait_event(ev)


def empty_cache():
    if CUDA:
        torch.cuda.empty_cache()


def warm_up(fn, n=3):
    """n runs of fn on a side stream, as CUDA graph capture wants first."""
    s = side_stream()
    if s is not None:
        s.wait_stream(torch.cuda.current_stream())
    with on(s):
        for _ in range(n):
            fn()
    if s is not None:
        torch.cuda.current_stream().wait_stream(s)


def capture(fn):
    """fn captured in a CUDA graph: its replay (fn itself without CUDA)."""
    if not CUDA:
        return fn
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def _attention(q, k, v, is_causal=False):
    """F.scaled_dot_product_attention for torch < 2.0 (a dry run on an old CPU build)."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:
        t = s.shape[-1]
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=s.device).triu(1), -1e9)
    return s.softmax(-1) @ v


sdpa = getattr(F, "scaled_dot_product_attention", _attention)


# ---- host batches and input pipelines ----------------------------------------------------
def stamp(t, n, bound):
    """New content in a reused host batch (a tensor or numpy array), as a loader's next batch
    has: the first element of every row set to a new sample id, below bound (ids stay valid)."""
    rows = (torch.from_numpy(t) if isinstance(t, np.ndarray) else t).reshape(len(t), -1)
    rows[:, 0] = (torch.arange(n, n + len(rows)) % bound).to(rows.dtype)


class Ring:
    """k host batches (tuples of tensors or arrays) reused in turn, as a loader's buffers are:
    next() waits until the batch's previous copy is done (the event given to copied()),
    gives its tensors new sample ids (below bounds[j] for the j-th, 1000 by default; fresh=False:
    not, for staging buffers that are overwritten anyway) and returns it."""

    def __init__(self, batches, bounds=None, fresh=True):
        self.batches, self.fresh = batches, fresh
        self.bounds = bounds or [1000] * len(batches[0])
        self.events, self.n, self.i = [None] * len(batches), 0, 0

    def next(self):
        self.i = self.n % len(self.batches)
        if self.events[self.i] is not None:
            self.events[self.i].synchronize()
        self.n += 1
        batch = self.batches[self.i]
        if self.fresh:
            for t, bound in zip(batch, self.bounds):
                stamp(t, self.n * len(t), bound)
        return batch

    def copied(self, ev):
        self.events[self.i] = ev


class Prefetcher:
    """A well-written input pipeline: each host batch (a tuple of pinned tensors from source())
    copied to the GPU on a side stream one step ahead of its use; done(event), if given, learns
    when the copy is over (Ring.copied)."""

    def __init__(self, source, done=None):
        self.source, self.done, self.stream, self.ahead = source, done, side_stream(), None

    def _issue(self):
        host = self.source()
        with on(self.stream):
            batch = tuple(t.to(dev, non_blocking=True) for t in host)
            ev = record(self.stream)
        if self.done is not None:
            self.done(ev)
        return batch, ev

    def next(self):
        batch, ev = self.ahead or self._issue()
        wait(ev)
        if CUDA:
            for t in batch:
                t.record_stream(torch.cuda.current_stream())
        self.ahead = self._issue()
        return batch


class PinnedExport:
    """Results copied to the host without blocking: into one of two pinned buffers on a side
    stream (put); take() returns the result put before the last one, after its copy's event,
    as a numpy array (None at first)."""

    def __init__(self, shape):
        self.bufs = [pin(torch.empty(shape)) for _ in range(2)]
        self.events, self.stream, self.n = [None, None], side_stream(), 0

    def put(self, y):
        i = self.n % 2
        if self.stream is not None:
            self.stream.wait_stream(torch.cuda.current_stream())
            y.record_stream(self.stream)
        with on(self.stream):
            self.bufs[i].copy_(y, non_blocking=True)
            self.events[i] = record(self.stream)
        self.n += 1

    def take(self):
        if self.n < 2:
            return None
        i = self.n % 2
        if self.events[i] is not None:
            self.events[i].synchronize()
        return self.bufs[i].numpy().copy()


# ---- transformer pieces (GPT and BERT style) ---------------------------------------------
def split_heads(qkv, heads):
    """[B, T, 3D] -> q, k, v, each [B, heads, T, D / heads]."""
    b, t, d3 = qkv.shape
    return qkv.view(b, t, 3, heads, d3 // 3 // heads).permute(2, 0, 3, 1, 4)


def merge_heads(y):
    b, h, t, dh = y.shape
    return y.transpose(1, 2).reshape(b, t, h * dh)


class DecoderBlock(nn.Module):
    """GPT-2 style pre-LN block: causal self-attention, GELU MLP."""

    def __init__(self, d):
        super().__init__()
        self.heads = max(1, d // 64)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = split_heads(self.qkv(self.ln1(x)), self.heads)
        x = x + self.proj(merge_heads(sdpa(q, k, v, is_causal=True)))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    """A GPT-2 style decoder; guard(x), when given, sees every block's output."""

    def __init__(self, vocab, d, layers, ctx, guard=None):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(DecoderBlock(d) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        self.guard = guard

    def forward(self, idx):
        x = self.tok(idx) + self.pos.weight[: idx.shape[1]]
        for block in self.blocks:
            x = block(x)
            if self.guard is not None:
                self.guard(x)
        return self.head(self.norm(x))


def lm_loss(model, ids):
    """Next-token cross entropy of ids [B, T + 1]."""
    logits = model(ids[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())


class EncoderBlock(nn.Module):
    """BERT style post-LN block."""

    def __init__(self, d):
        super().__init__()
        self.heads = max(1, d // 64)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = split_heads(self.qkv(x), self.heads)
        x = self.ln1(x + self.proj(merge_heads(sdpa(q, k, v))))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


class Encoder(nn.Module):
    """A BERT style encoder with a linear head on every token."""

    def __init__(self, vocab, d, layers, ctx, out):
        super().__init__()
        self.tok, self.pos, self.ln = nn.Embedding(vocab, d), nn.Embedding(ctx, d), nn.LayerNorm(d)
        self.blocks = nn.Sequential(*(EncoderBlock(d) for _ in range(layers)))
        self.head = nn.Linear(d, out)

    def forward(self, ids):
        return self.head(self.blocks(self.ln(self.tok(ids) + self.pos.weight[: ids.shape[1]])))


# ---- sync-frequency ------------------------------------------------------------------------
def case_gpt_amax_guard(fixed):
    vocab, d, layers, ctx, batch = pick((8192, 768, 8, 512, 12), (64, 32, 2, 16, 2))
    peak = torch.zeros((), device=dev)

    def overflow_check(x):                          # planted: a host sync after every block
        if x.detach().abs().amax() > 1e4:
            raise FloatingPointError("activation overflow")

    def record_peak(x):                             # fixed: the peak stays on the GPU
        torch.maximum(peak, x.detach().abs().amax(), out=peak)

    model = GPT(vocab, d, layers, ctx, record_peak if fixed else overflow_check).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, **fused())
    ids = torch.randint(vocab, (batch, ctx + 1), device=dev)
    state = {"step": 0}

    def step():
        with amp():
            loss = lm_loss(model, ids)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        state["step"] += 1
        if fixed and state["step"] % 100 == 0 and peak > 1e4:
            raise FloatingPointError("activation overflow")
    return step


def detector(width, anchors, classes):
    """An FCOS/RetinaNet style dense detector: four stride-2 conv stages, then a class head and
    a box head over every anchor of the stride-16 map."""
    def stage(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
    c = [3, width, 2 * width, 4 * width, 4 * width]
    return nn.ModuleDict({
        "backbone": nn.Sequential(*(stage(a, b) for a, b in zip(c, c[1:]))),
        "cls": nn.Conv2d(c[-1], anchors * classes, 3, 1, 1),
        "box": nn.Conv2d(c[-1], anchors * 4, 3, 1, 1),
    }).to(dev, memory_format=torch.channels_last)


def detect(net, images, classes):
    """Class logits [B, A, classes] and box deltas [B, A, 4]."""
    f = net["backbone"](images)
    b = len(images)
    return (net["cls"](f).permute(0, 2, 3, 1).reshape(b, -1, classes),
            net["box"](f).permute(0, 2, 3, 1).reshape(b, -1, 4))


def det_loss_per_image(cls, box, labels, boxes, classes):
    """The loss image by image, on the positive anchors found with torch.nonzero (planted)."""
    total = 0
    for i in range(len(cls)):
        pos = torch.nonzero(labels[i] > 0).squeeze(1)
        target = F.one_hot(labels[i], classes + 1)[:, 1:].to(cls.dtype)
        cls_loss = F.binary_cross_entropy_with_logits(cls[i], target, reduction="sum")
        box_loss = F.smooth_l1_loss(box[i][pos], boxes[i][pos], reduction="sum")
        total = total + (cls_loss + box_loss) / max(len(pos), 1)
    return total / len(cls)


def det_loss_batched(cls, box, labels, boxes, classes):
    """The same loss for the whole batch, positives as a mask (fixed)."""
    pos = labels > 0
    npos = pos.sum(1).clamp(min=1)
    target = F.one_hot(labels, classes + 1)[..., 1:].to(cls.dtype)
    cls_loss = F.binary_cross_entropy_with_logits(cls, target, reduction="none").sum((1, 2))
    box_loss = (F.smooth_l1_loss(box, boxes, reduction="none").sum(2) * pos).sum(1)
    return ((cls_loss + box_loss) / npos).mean()


def case_det_nonzero_loss(fixed):
    batch, res, width, anchors, classes = pick((16, 384, 64, 9, 20), (2, 64, 8, 3, 4))
    net = detector(width, anchors, classes)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, **fused())
    images = torch.randn(batch, 3, res, res, device=dev).to(memory_format=torch.channels_last)
    n = anchors * (res // 16) ** 2
    labels = torch.where(torch.rand(batch, n, device=dev) < 0.03,
                         torch.randint(1, classes + 1, (batch, n), device=dev), 0)
    boxes = torch.randn(batch, n, 4, device=dev)
    loss_fn = det_loss_batched if fixed else det_loss_per_image

    def step():
        opt.zero_grad(set_to_none=True)
        with amp():
            cls, box = detect(net, images, classes)
        loss_fn(cls.float(), box.float(), labels, boxes, classes).backward()
        opt.step()
    return step


TASKS = {"sentiment": 3, "topic": 20, "language": 8, "toxic": 2}


class MultiTaskTrainer:
    """A small Trainer: a shared Transformer encoder and a linear head per task, gradient
    accumulation over micro-batches, a loss history per task for the progress log. eager_log
    (planted): each micro-batch's loss checked finite with `if` and its losses read back with
    .tolist() at once; else (fixed) both kept on the GPU and read every log_every steps."""

    def __init__(self, d, layers, vocab, micro, seq, accum, eager_log):
        layer = nn.TransformerEncoderLayer(d, max(1, d // 64), 4 * d, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.model = nn.ModuleDict({
            "embed": nn.Embedding(vocab, d),
            "encoder": nn.TransformerEncoder(layer, layers, enable_nested_tensor=False),
            "heads": nn.ModuleDict({t: nn.Linear(d, n) for t, n in TASKS.items()}),
        }).to(dev)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, **fused())
        self.batches = [(torch.randint(vocab, (micro, seq), device=dev),
                         {t: torch.randint(n, (micro,), device=dev) for t, n in TASKS.items()})
                        for _ in range(accum)]
        self.eager_log, self.log_every, self.steps = eager_log, 50, 0
        self.history = {t: [] for t in TASKS}
        self.pending, self.bad = [], torch.zeros((), dtype=torch.bool, device=dev)

    def losses(self, ids, labels):
        with amp():
            h = self.model["encoder"](self.model["embed"](ids)).mean(1)
            return torch.stack([F.cross_entropy(self.model["heads"][t](h).float(), labels[t])
                                for t in TASKS])

    def micro_step(self, ids, labels):
        losses = self.losses(ids, labels)
        total = losses.sum()
        if not self.eager_log:
            self.bad |= ~torch.isfinite(total)
        elif not torch.isfinite(total):
            raise FloatingPointError(f"loss {total}")
        (total / len(self.batches)).backward()
        if self.eager_log:
            self.log(losses.tolist())
        else:
            self.pending.append(losses.detach())

    def log(self, row):
        for t, v in zip(TASKS, row):
            self.history[t].append(v)

    def train_step(self):
        for ids, labels in self.batches:
            self.micro_step(ids, labels)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.steps += 1
        if not self.eager_log and self.steps % self.log_every == 0:
            self.flush()

    def flush(self):
        if self.bad:
            raise FloatingPointError("a non-finite loss in the last steps")
        for row in torch.stack(self.pending).tolist():
            self.log(row)
        self.pending.clear()


def case_multitask_tolist(fixed):
    d, layers, vocab, micro, seq, accum = pick((1024, 4, 32000, 8, 512, 3),
                                               (32, 1, 100, 2, 16, 2))
    return MultiTaskTrainer(d, layers, vocab, micro, seq, accum, eager_log=not fixed).train_step


# ---- sync-copy -----------------------------------------------------------------------------
def case_embed_export(fixed):
    """Token embeddings (ColBERT style, 128 per token) of every batch, kept for an index
    writer (its queue: sink)."""
    vocab, d, layers, batch, seq, dim = pick((30522, 768, 12, 64, 256, 128),
                                             (100, 32, 1, 2, 16, 8))
    model = Encoder(vocab, d, layers, seq, dim).to(dev, torch.bfloat16).eval()
    batches = [torch.randint(vocab, (batch, seq), device=dev) for _ in range(4)]
    sink = collections.deque(maxlen=8)
    export = PinnedExport((batch, seq, dim)) if fixed else None
    state = {"i": 0}

    @torch.no_grad()
    def step():
        emb = F.normalize(model(batches[state["i"] % len(batches)]).float(), dim=-1)
        state["i"] += 1
        if not fixed:
            sink.append(emb.cpu().numpy())          # blocks until the GPU is done
            return
        export.put(emb)
        prev = export.take()
        if prev is not None:
            sink.append(prev)
    return step


# ---- pageable-copy -------------------------------------------------------------------------
def audio_net(ch, layers, classes):
    """A raw-waveform classifier: a learned filterbank (strided Conv1d), Conv1d blocks, average
    pooling, a linear classifier."""
    blocks = [nn.Conv1d(1, ch, 400, stride=160), nn.BatchNorm1d(ch), nn.GELU()]
    for _ in range(layers):
        blocks += [nn.Conv1d(ch, ch, 5, padding=2), nn.BatchNorm1d(ch), nn.GELU()]
    return nn.Sequential(*blocks, nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                         nn.Linear(ch, classes)).to(dev)


def case_audio_from_numpy(fixed):
    batch, samples, ch, layers, classes = pick((96, 64000, 256, 6, 35), (2, 800, 8, 1, 5))
    model = audio_net(ch, layers, classes)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **fused())
    rng = np.random.default_rng(0)
    # decoded clips as an audio library gives them: float32 numpy arrays
    clips = Ring([(rng.standard_normal((batch, 1, samples), dtype=np.float32),) for _ in range(3)])
    labels = torch.randint(classes, (batch,), device=dev)
    if fixed:
        staging = Ring([(pin(torch.empty(batch, 1, samples)),) for _ in range(2)], fresh=False)

        def pinned():
            (buf,) = staging.next()
            buf.copy_(torch.from_numpy(clips.next()[0]))
            return (buf,)
        feed = Prefetcher(pinned, staging.copied)

    def step():
        x = feed.next()[0] if fixed else torch.from_numpy(clips.next()[0]).to(dev)
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = F.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
    return step


class NoiseImages(torch.utils.data.Dataset):
    """Decoded images (float32 CHW, as ToTensor() gives) and labels; random, one per index."""

    def __init__(self, res, classes):
        self.res, self.classes = res, classes

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, self.res, self.res, generator=g), i % self.classes


def vgg_bn(widths, classes):
    layers, cin = [], 3
    for w in widths:
        layers += [nn.Conv2d(cin, w, 3, padding=1, bias=False), nn.BatchNorm2d(w),
                   nn.ReLU(inplace=True), nn.Conv2d(w, w, 3, padding=1, bias=False),
                   nn.BatchNorm2d(w), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
        cin = w
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(cin, classes)).to(dev, memory_format=torch.channels_last)


def loader(dataset, batch, workers, pin_memory):
    kw = {"persistent_workers": True, "prefetch_factor": 2} if workers else {}
    return iter(torch.utils.data.DataLoader(dataset, batch_size=batch, num_workers=workers,
                                            pin_memory=pin_memory and CUDA, **kw))


def case_loader_unpinned(fixed):
    batch, res, widths, workers = pick((96, 128, (32, 64, 128, 256), 6), (2, 16, (4, 8), 2))
    model = vgg_bn(widths, 100)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, **fused())
    it = loader(NoiseImages(res, 100), batch, workers, pin_memory=fixed)
    feed = Prefetcher(lambda: next(it)) if fixed else None

    def step():
        x, y = feed.next() if fixed else (t.to(dev, non_blocking=True) for t in next(it))
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = F.cross_entropy(model(x.to(memory_format=torch.channels_last)), y)
        loss.backward()
        opt.step()
    step.settle = 2 * workers           # paired: the other variant's workers refill meanwhile
    return step


# ---- copy-overlap ----------------------------------------------------------------------------
def case_genes_same_stream(fixed):
    """Older style: expression profiles (20000 genes a row) in pinned memory, each batch copied
    with non_blocking=True right before its use, on the compute stream (planted)."""
    batch, genes, hidden, classes = pick((2048, 20000, 4096, 30), (4, 64, 16, 3))
    model = nn.Sequential(nn.Linear(genes, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                          nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused())
    ring = Ring([(pin(torch.rand(batch, genes)), pin(torch.randint(classes, (batch,))))
                 for _ in range(2)], bounds=[1000, classes])
    feed = Prefetcher(ring.next, ring.copied) if fixed else None

    def step():
        if fixed:
            x, y = feed.next()
        else:
            x, y = (t.to(dev, non_blocking=True) for t in ring.next())
            ring.copied(record())
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


# ---- small-copies --------------------------------------------------------------------------
class DLRM(nn.Module):
    """DLRM style: an embedding per categorical column, a bottom MLP over the dense columns, a
    top MLP over their concatenation, one click logit."""

    def __init__(self, tables, rows, dim, dense, top):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(dense, 512), nn.ReLU(), nn.Linear(512, dim),
                                    nn.ReLU())
        self.top = nn.Sequential(nn.Linear((tables + 1) * dim, top), nn.ReLU(),
                                 nn.Linear(top, top), nn.ReLU(), nn.Linear(top, 1))

    def forward(self, sparse, dense):
        feats = [self.bottom(dense)] + [e(ids) for e, ids in zip(self.embs, sparse)]
        return self.top(torch.cat(feats, 1)).squeeze(1)


def case_dlrm_columns(fixed):
    batch, tables, rows, dim, dense, top = pick((16384, 26, 20000, 64, 13, 4096),
                                                (4, 3, 50, 4, 2, 8))
    names = [f"C{i}" for i in range(tables)] + [f"I{i}" for i in range(dense)] + ["label"]
    # the columns of a batch as a columnar reader gives them: one host tensor each
    columns = Ring([tuple(torch.randint(rows, (batch,)) for _ in range(tables)) +
                    tuple(torch.rand(batch) for _ in range(dense + 1)) for _ in range(4)],
                   bounds=[rows] * tables + [1000] * dense + [2])
    model = DLRM(tables, rows, dim, dense, top).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, **fused())
    if fixed:
        staging = Ring([(pin(torch.empty(tables, batch, dtype=torch.long)),
                         pin(torch.empty(dense + 1, batch))) for _ in range(2)], fresh=False)

        def packed():                               # the collate step packs the columns
            cols = columns.next()
            ids, floats = staging.next()
            torch.stack(cols[:tables], out=ids)
            torch.stack(cols[tables:], out=floats)
            return ids, floats
        feed = Prefetcher(packed, staging.copied)

    def batch_on_gpu():
        if fixed:
            ids, floats = feed.next()
            return list(ids.unbind(0)), floats[:dense].T, floats[dense]
        cols = {k: v.to(dev) for k, v in zip(names, columns.next())}   # one copy a column
        return ([cols[f"C{i}"] for i in range(tables)],
                torch.stack([cols[f"I{i}"] for i in range(dense)], 1), cols["label"])

    def step():
        sparse, dense_x, label = batch_on_gpu()
        opt.zero_grad(set_to_none=True)
        with amp():
            logit = model(sparse, dense_x)
        F.binary_cross_entropy_with_logits(logit.float(), label).backward()
        opt.step()
    return step


# ---- launch-bound --------------------------------------------------------------------------
class GRUScorer(nn.Module):
    """Scores sensor windows [B, T, F] with stacked GRU cells, one call per layer and step."""

    def __init__(self, features, hidden, layers):
        super().__init__()
        self.cells = nn.ModuleList(nn.GRUCell(features if i == 0 else hidden, hidden)
                                   for i in range(layers))
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = [x.new_zeros(len(x), c.hidden_size) for c in self.cells]
        for t in range(x.shape[1]):
            inp = x[:, t]
            for i, cell in enumerate(self.cells):
                h[i] = inp = cell(inp, h[i])
        return self.out(h[-1]).squeeze(1)


def case_gru_scorer(fixed):
    batch, steps, features, hidden, layers = pick((512, 96, 32, 512, 3), (2, 4, 3, 8, 2))
    model = GRUScorer(features, hidden, layers).to(dev).eval()
    windows = [torch.randn(batch, steps, features, device=dev) for _ in range(4)]
    static, out, state = windows[0].clone(), {}, {"i": 0}

    def score(x):
        with torch.no_grad():
            out["scores"] = model(x)

    if fixed:
        warm_up(lambda: score(static))
        replay = capture(lambda: score(static))

    def step():
        x = windows[state["i"] % len(windows)]
        state["i"] += 1
        if not fixed:
            score(x)
            return
        static.copy_(x)
        replay()
    return step


class ResBlock(nn.Module):
    """A DDPM ResBlock: GroupNorm, SiLU, conv, plus the time embedding; twice; a skip."""

    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(min(32, cin), cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(tdim, cout)
        self.n2, self.c2 = nn.GroupNorm(min(32, cout), cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class UNet(nn.Module):
    """A DDPM UNet at two resolutions (no attention): 2 ResBlocks down, a middle one, 2 and 3
    up, skip connections by concatenation."""

    def __init__(self, ch):
        super().__init__()
        self.ch, tdim = ch, 4 * ch
        self.temb = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.down1 = nn.ModuleList([ResBlock(ch, ch, tdim), ResBlock(ch, ch, tdim)])
        self.pool = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.down2 = nn.ModuleList([ResBlock(ch, 2 * ch, tdim), ResBlock(2 * ch, 2 * ch, tdim)])
        self.mid = ResBlock(2 * ch, 2 * ch, tdim)
        self.up2 = nn.ModuleList([ResBlock(4 * ch, 2 * ch, tdim), ResBlock(4 * ch, 2 * ch, tdim)])
        self.upsample = nn.Sequential(nn.Upsample(scale_factor=2),
                                      nn.Conv2d(2 * ch, 2 * ch, 3, padding=1))
        self.up1 = nn.ModuleList([ResBlock(3 * ch, ch, tdim), ResBlock(2 * ch, ch, tdim),
                                  ResBlock(2 * ch, ch, tdim)])
        self.out = nn.Sequential(nn.GroupNorm(min(32, ch), ch), nn.SiLU(),
                                 nn.Conv2d(ch, 3, 3, padding=1))

    def timestep_embedding(self, t):
        half = self.ch // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], 1)

    def forward(self, x, t):
        temb = self.temb(self.timestep_embedding(t))
        h = self.inp(x)
        hs = [h]
        for b in self.down1:
            h = b(h, temb)
            hs.append(h)
        h = self.pool(h)
        for b in self.down2:
            h = b(h, temb)
            hs.append(h)
        h = self.mid(h, temb)
        for b in self.up2:
            h = b(torch.cat([h, hs.pop()], 1), temb)
        h = self.upsample(h)
        for b in self.up1:
            h = b(torch.cat([h, hs.pop()], 1), temb)
        return self.out(h)


def update_ema(targets, sources, rate):
    """guided-diffusion's EMA update, one parameter at a time (planted)."""
    for targ, src in zip(targets, sources):
        targ.detach().mul_(rate).add_(src, alpha=1 - rate)


def update_ema_foreach(targets, sources, rate):
    """The same update over all parameters at once (fixed)."""
    torch._foreach_mul_(targets, rate)
    torch._foreach_add_(targets, sources, alpha=1 - rate)


def case_diffusion_ema(fixed):
    batch, res, ch = pick((48, 32, 128), (2, 8, 8))
    model = UNet(ch).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, **fused())
    params = [p.detach() for p in model.parameters()]
    emas = {rate: [p.clone() for p in params] for rate in (0.9999, 0.999)}
    alphas = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000, device=dev), 0)
    x0 = torch.randn(batch, 3, res, res, device=dev)
    update = update_ema_foreach if fixed else update_ema

    def step():
        t = torch.randint(1000, (batch,), device=dev)
        noise = torch.randn_like(x0)
        a = alphas[t][:, None, None, None]
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = F.mse_loss(model(a.sqrt() * x0 + (1 - a).sqrt() * noise, t).float(), noise)
        loss.backward()
        opt.step()
        for rate, ema in emas.items():
            update(ema, params, rate)
    return step


class ResMLP(nn.Module):
    """A ResNet-like MLP for tabular data: residual blocks of LayerNorm, Linear, GELU, Linear."""

    def __init__(self, features, d, blocks):
        super().__init__()
        self.inp = nn.Linear(features, d)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            for _ in range(blocks))
        self.out = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 1))

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = x + block(x)
        return self.out(x).squeeze(1)


def case_tabular_resmlp(fixed):
    """Fixed: the whole training step captured in a CUDA graph (the PyTorch docs' whole-network
    capture: static input and target, Adam with capturable=True)."""
    batch, features, d, blocks = pick((2048, 64, 512, 48), (4, 5, 8, 2))
    model = ResMLP(features, d, blocks).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=fixed and CUDA, **fused())
    data = [(torch.randn(batch, features, device=dev), torch.randn(batch, device=dev))
            for _ in range(4)]
    static_x, static_y = data[0][0].clone(), data[0][1].clone()
    state = {"i": 0}

    def train(x, y):
        F.mse_loss(model(x), y).backward()
        opt.step()

    if fixed:
        def warm():
            opt.zero_grad(set_to_none=True)
            train(static_x, static_y)
        warm_up(warm)
        opt.zero_grad(set_to_none=True)
        replay = capture(lambda: train(static_x, static_y))

    def step():
        x, y = data[state["i"] % len(data)]
        state["i"] += 1
        if not fixed:
            opt.zero_grad(set_to_none=True)
            train(x, y)
            return
        static_x.copy_(x)
        static_y.copy_(y)
        replay()
    return step


# ---- dataloader-workers ----------------------------------------------------------------------
_TEXT = {}


def text_vocab():
    """A made-up language: 20000 words of 1-4 syllables; a WordPiece vocabulary of its
    syllables (as word starts and ## continuations) and its 3000 most common words."""
    if not _TEXT:
        syl = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiou"] + ["an", "er", "in", "st"]
        rng = random.Random(0)
        words = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 4))) for _ in range(20000)]
        vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, ".": 3}
        for piece in syl + ["##" + s for s in syl] + words[:3000]:
            vocab.setdefault(piece, len(vocab))
        _TEXT.update(words=words, vocab=vocab)
    return _TEXT["words"], _TEXT["vocab"]


def wordpiece(word, vocab):
    """Greedy longest-match-first WordPiece of one word."""
    ids, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return [vocab["[UNK]"]]
        ids.append(vocab[piece])
        start = end
    return ids


class Reviews(torch.utils.data.Dataset):
    """Product reviews made up per index, tokenized in Python (a tokenizer without a fast
    backend), padded to seq tokens; a 1-5 star label."""

    def __init__(self, seq):
        self.seq = seq
        self.words, self.vocab = text_vocab()

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        r = random.Random(i)
        text = " ".join(r.choice(self.words) for _ in range(r.randint(40, 80))).capitalize() + "."
        ids = [self.vocab["[CLS]"]]
        for w in text.lower().replace(".", " .").split():
            ids += wordpiece(w, self.vocab)
        ids = ids[: self.seq] + [0] * max(0, self.seq - len(ids))
        return torch.tensor(ids), r.randrange(5)


class ConvTextClassifier(nn.Module):
    """Embeddings, residual Conv1d blocks, max pooling over time, a linear classifier."""

    def __init__(self, vocab, d, layers, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.convs = nn.ModuleList(nn.Conv1d(d, d, 3, padding=1) for _ in range(layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(d) for _ in range(layers))
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        x = self.embed(ids).transpose(1, 2)
        for conv, norm in zip(self.convs, self.norms):
            x = x + F.gelu(norm(conv(x)))
        return self.head(x.amax(2))


def case_text_tokenize_loader(fixed):
    batch, seq, d, layers, workers = pick((128, 256, 384, 6, 6), (2, 16, 8, 1, 2))
    data = Reviews(seq)
    model = ConvTextClassifier(len(data.vocab), d, layers, 5).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **fused())
    it = loader(data, batch, workers if fixed else 0, pin_memory=True)

    def step():
        ids, stars = (t.to(dev, non_blocking=True) for t in next(it))
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = F.cross_entropy(model(ids), stars)
        loss.backward()
        opt.step()
    step.settle = 2 * workers           # paired: the fixed variant's workers refill meanwhile
    return step


# ---- fp32-matmul -----------------------------------------------------------------------------
def no_tf32():
    """Both fp32 cases' setting (process-global: again before each block of a paired run):
    no TF32 anywhere, "for reproducibility"; PyTorch's default for matmul besides."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


class Bottleneck(nn.Module):
    """torchvision's ResNet bottleneck: 1x1, 3x3 (strided), 1x1 x4, projection shortcut."""

    def __init__(self, cin, width, stride):
        super().__init__()
        out = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


def resnet(layers, classes, base=64):
    stem = [nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1)]
    blocks, cin = [], base
    for i, n in enumerate(layers):
        for j in range(n):
            blocks.append(Bottleneck(cin, base * 2 ** i, 2 if j == 0 and i > 0 else 1))
            cin = 4 * base * 2 ** i
    return nn.Sequential(*stem, *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(cin, classes))


def case_resnet_fp32(fixed):
    no_tf32()
    batch, res, base = pick((96, 160, 64), (2, 32, 4))
    model = resnet((2, 2, 2, 2), 1000, base).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5, **fused())
    x = torch.randn(batch, 3, res, res, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(1000, (batch,), device=dev)
    precision = amp if fixed else contextlib.nullcontext

    def step():
        opt.zero_grad(set_to_none=True)
        with precision():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    step.enter = no_tf32
    return step


class FFNStack(nn.Module):
    """The MLP half of transformer blocks, stacked: x + Linear(GELU(Linear(LayerNorm(x))))."""

    def __init__(self, d, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            for _ in range(blocks))

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return x


def case_ffn_fp32(fixed):
    no_tf32()
    tokens, d, blocks = pick((4096, 1024, 4), (8, 16, 1))
    model = FFNStack(d, blocks).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused())
    x, target = torch.randn(tokens, d, device=dev), torch.randn(tokens, d, device=dev)
    precision = amp if fixed else contextlib.nullcontext

    def step():
        opt.zero_grad(set_to_none=True)
        with precision():
            y = model(x)
        F.mse_loss(y.float(), target).backward()
        opt.step()
    step.enter = no_tf32
    return step


# ---- optimizer-foreach -----------------------------------------------------------------------
class Tower(nn.Module):
    """One tower of a two-tower retrieval model: an embedding per id field, an MLP, a unit
    vector."""

    def __init__(self, tables, dim, hidden, out):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(rows, dim) for rows in tables)
        self.mlp = nn.Sequential(nn.Linear(len(tables) * dim, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, ids):
        x = torch.cat([e(ids[:, i]) for i, e in enumerate(self.embs)], 1)
        return F.normalize(self.mlp(x).float(), dim=-1)


def case_two_tower_adam(fixed):
    """Planted: Adam(foreach=False), as set to avoid foreach's memory peak on big tables."""
    batch, users, items, dim, hidden = pick(
        (8192, (1_000_000, 100_000, 10_000, 100), (1_000_000, 100_000, 10_000), 64, 4096),
        (4, (50, 10), (40, 10), 4, 8))
    user, item = Tower(users, dim, hidden, 256).to(dev), Tower(items, dim, hidden, 256).to(dev)
    params = [*user.parameters(), *item.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3, **(fused() if fixed else {"foreach": False}))
    pairs = [(torch.stack([torch.randint(n, (batch,), device=dev) for n in users], 1),
              torch.stack([torch.randint(n, (batch,), device=dev) for n in items], 1))
             for _ in range(4)]
    labels, state = torch.arange(batch, device=dev), {"i": 0}

    def step():
        u_ids, i_ids = pairs[state["i"] % len(pairs)]
        state["i"] += 1
        opt.zero_grad(set_to_none=True)
        with amp():
            logits = user(u_ids) @ item(i_ids).T / 0.05             # in-batch negatives
        F.cross_entropy(logits.float(), labels).backward()
        opt.step()
    return step


class MixerBlock(nn.Module):
    def __init__(self, tokens, d, token_hidden, channel_hidden):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(),
                                       nn.Linear(token_hidden, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(d, channel_hidden), nn.GELU(),
                                         nn.Linear(channel_hidden, d))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class Mixer(nn.Module):
    """MLP-Mixer (Tolstikhin et al. 2021): patches, token-mixing and channel-mixing MLPs."""

    def __init__(self, res, patch, d, depth, classes):
        super().__init__()
        tokens = (res // patch) ** 2
        self.stem = nn.Conv2d(3, d, patch, patch)
        self.blocks = nn.Sequential(*(MixerBlock(tokens, d, d // 2, 4 * d) for _ in range(depth)))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x).flatten(2).transpose(1, 2))
        return self.head(self.norm(x).mean(1))


def sgd_step(params, bufs, lr, momentum, wd):
    """SGD with momentum and weight decay, one parameter at a time (planted)."""
    with torch.no_grad():
        for p, buf in zip(params, bufs):
            d_p = p.grad.add(p, alpha=wd)
            buf.mul_(momentum).add_(d_p)
            p.add_(buf, alpha=-lr)


def case_mixer_manual_sgd(fixed):
    batch, res, d, depth = pick((64, 224, 512, 12), (2, 32, 16, 1))
    model = Mixer(res, 16, d, depth, 1000).to(dev)
    params = list(model.parameters())
    hyper = {"lr": 0.05, "momentum": 0.9}
    if fixed:
        opt = torch.optim.SGD(params, weight_decay=1e-4, **hyper, **fused())
    else:
        bufs = [torch.zeros_like(p) for p in params]
    x = torch.randn(batch, 3, res, res, device=dev)
    y = torch.randint(1000, (batch,), device=dev)

    def step():
        for p in params:
            p.grad = None
        with amp():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        if fixed:
            opt.step()
        else:
            sgd_step(params, bufs, wd=1e-4, **hyper)
    return step


# ---- zero-grad-memset ------------------------------------------------------------------------
def case_autoencoder_zero_loop(fixed):
    """Mult-DAE (Liang et al. 2018): a denoising autoencoder over users' item interactions with
    a multinomial likelihood; planted: the gradients zeroed by a loop of p.grad.zero_()."""
    batch, items, hidden, latent = pick((1024, 100_000, 1024, 256), (2, 50, 8, 4))
    model = nn.Sequential(nn.Linear(items, hidden), nn.Tanh(), nn.Linear(hidden, latent),
                          nn.Tanh(), nn.Linear(latent, hidden), nn.Tanh(),
                          nn.Linear(hidden, items)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, **fused())
    clicks = (torch.rand(batch, items, device=dev) < 0.01).float()

    def zero_grads():
        if fixed:
            opt.zero_grad(set_to_none=True)
            return
        for p in model.parameters():
            if p.grad is not None:
                p.grad.zero_()

    def step():
        zero_grads()
        with amp():
            logits = model(F.dropout(F.normalize(clicks, dim=1), 0.5))
        loss = -(F.log_softmax(logits.float(), 1) * clicks).sum(1).mean()
        loss.backward()
        opt.step()
    return step


# ---- graph-recapture -------------------------------------------------------------------------
def case_graph_per_request(fixed):
    """An inference server replaying its bf16 encoder from a CUDA graph; planted: the graph is
    captured in the request handler, so again for every request."""
    vocab, d, layers, batch, seq = pick((30522, 1024, 6, 32, 256), (100, 32, 1, 2, 16))
    model = Encoder(vocab, d, layers, seq, d).to(dev, torch.bfloat16).eval()
    requests = [torch.randint(vocab, (batch, seq), device=dev) for _ in range(4)]
    static, out, graphs, state = requests[0].clone(), {}, {}, {"i": 0}

    def forward():
        with torch.no_grad():
            out["hidden"] = model(static)

    warm_up(forward)

    def step():                                     # one request
        ids = requests[state["i"] % len(requests)]
        state["i"] += 1
        static.copy_(ids)
        if fixed:
            replay = graphs.get(ids.shape) or graphs.setdefault(ids.shape, capture(forward))
        else:
            replay = capture(forward)
        replay()
    return step


# ---- allocator-churn -------------------------------------------------------------------------
def case_varlen_empty_cache(fixed):
    """A language model trained on length-bucketed batches (one of each bucket a step);
    planted: torch.cuda.empty_cache() after every step, "as the shapes vary"."""
    vocab, d, layers, batch, lengths = pick((8192, 768, 6, 8, (512, 384, 256)),
                                            (64, 32, 1, 2, (16, 12, 8)))
    model = GPT(vocab, d, layers, max(lengths)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, **fused())
    buckets = [torch.randint(vocab, (batch, t + 1), device=dev) for t in lengths]

    def step():
        for ids in buckets:
            with amp():
                loss = lm_loss(model, ids)
            (loss / len(buckets)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if not fixed:
            empty_cache()
    return step


# ---- gpu-starvation --------------------------------------------------------------------------
def case_curriculum_numpy(fixed):
    """A regression MLP on a GPU-resident table, batches drawn by a curriculum: sample i with
    weight exp(-difficulty_i / temperature), the temperature rising over training. Planted: the
    weights and the draw in numpy on the host every step; fixed: the same inverse-CDF draw on
    the GPU."""
    n, batch, features, hidden = pick((393216, 8192, 256, 4096), (1000, 4, 8, 16))
    data, targets = torch.randn(n, features, device=dev), torch.randn(n, device=dev)
    difficulty = np.random.default_rng(0).random(n)
    difficulty_gpu = torch.from_numpy(difficulty).to(dev)
    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                          nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 1)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused())
    rng, state = np.random.default_rng(1), {"step": 0}

    def draw_numpy(temp):
        w = np.exp(-difficulty / temp)
        w /= w.sum()
        return torch.from_numpy(rng.choice(n, size=batch, p=w)).to(dev, non_blocking=True)

    def draw_gpu(temp):
        cdf = torch.cumsum(torch.exp(-difficulty_gpu / temp), 0)
        u = torch.rand(batch, device=dev, dtype=cdf.dtype) * cdf[-1]
        return torch.searchsorted(cdf, u).clamp_(max=n - 1)

    draw = draw_gpu if fixed else draw_numpy

    def step():
        idx = draw(0.1 + 0.9 * min(state["step"] / 10000, 1))
        state["step"] += 1
        opt.zero_grad(set_to_none=True)
        with amp():
            pred = model(data[idx]).squeeze(1)
        F.mse_loss(pred.float(), targets[idx]).backward()
        opt.step()
    return step


# ---- redundant-replication -------------------------------------------------------------------
def case_host_state_kept(fixed):
    """An inference server that builds its model on the host (as loading a checkpoint does) and
    moves it to the GPU; planted: the host state_dict kept "to reset the model later" (1 GiB)."""
    d, layers, batch = pick((4096, 16, 4096), (16, 2, 2))
    model = nn.Sequential(*(nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(layers)))
    checkpoint = model.state_dict()                 # host tensors, shared with the parameters
    model.to(dev).eval()
    kept = {} if fixed else {"initial_state": checkpoint}
    del checkpoint
    x = torch.randn(batch, d, device=dev)

    def step():
        with torch.no_grad(), amp():
            model(x)
    step.kept = kept                    # held as long as the loop runs
    return step


# ---- clean models --------------------------------------------------------------------------
def clean_llama():
    batch, seq, vocab = pick((16, 512, 32000), (2, 16, 128))
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        print("NOTE llama: transformers is not importable: a hand-written GPT instead", flush=True)
        model, hf = GPT(vocab, pick(768, 32), pick(6, 1), seq).to(dev), False
    else:
        cfg = LlamaConfig(vocab_size=vocab, hidden_size=pick(768, 32),
                          intermediate_size=pick(2048, 64), num_hidden_layers=pick(6, 1),
                          num_attention_heads=pick(12, 2), num_key_value_heads=pick(12, 2),
                          max_position_embeddings=seq + 1, use_cache=False)
        model, hf = LlamaForCausalLM(cfg).to(dev), True
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, **fused())
    ids = torch.randint(vocab, (batch, seq + 1), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = model(input_ids=ids, labels=ids).loss if hf else lm_loss(model, ids)
        loss.backward()
        opt.step()
    return step


class ConvNeXtBlock(nn.Module):
    """ConvNeXt block: depthwise 7x7, LayerNorm, pointwise MLP x4, layer scale."""

    def __init__(self, d):
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.gamma = nn.Parameter(torch.full((d,), 1e-6))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        return x + (self.gamma * self.mlp(self.norm(y))).permute(0, 3, 1, 2)


def convnext(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), classes=1000):
    layers = [nn.Conv2d(3, dims[0], 4, 4), nn.GroupNorm(1, dims[0])]
    for i, (n, d) in enumerate(zip(depths, dims)):
        if i:
            layers += [nn.GroupNorm(1, dims[i - 1]), nn.Conv2d(dims[i - 1], d, 2, 2)]
        layers += [ConvNeXtBlock(d) for _ in range(n)]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(dims[-1]),
                         nn.Linear(dims[-1], classes))


def convnext_tiny():
    """timm's convnext_tiny, else torchvision's, else the hand-written one (said in a NOTE)."""
    try:
        import timm
        return timm.create_model(pick("convnext_tiny", "convnext_atto"), pretrained=False)
    except ImportError:
        pass
    try:
        import torchvision
        print("NOTE convnext: timm is not importable: torchvision's convnext_tiny", flush=True)
        return torchvision.models.convnext_tiny(weights=None)
    except ImportError:
        print("NOTE convnext: neither timm nor torchvision is importable: a hand-written "
              "ConvNeXt-T", flush=True)
        return convnext(*pick(((3, 3, 9, 3), (96, 192, 384, 768)), ((1, 1, 1, 1), (8, 16, 32, 64))))


def clean_convnext():
    batch, res = pick((96, 160), (2, 32))
    model = convnext_tiny().to(dev, memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **fused())
    x = torch.randn(batch, 3, res, res, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(1000, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with amp():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


# ---- the harness (as tests/gpu/suite/programs.py's) ------------------------------------------
def defaults():
    """The process-global settings every variant starts from: TF32 allowed for fp32 matrix
    products (what most training scripts set); the fp32 cases' enter() turns it off."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


def build(case, variant):
    """One variant's step, built as its own process would build it (same seeds, defaults)."""
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    defaults()
    if variant == "clean":
        return globals()["clean_" + case]()
    return globals()["case_" + case](variant == "fixed")


def timed(step, n):
    """ms per step of n steps between two synchronizations."""
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return (time.perf_counter() - t0) / n * 1e3


def paired(a):
    """Both variants in this process, blocks in the order P F F P P F ... (module docstring)."""
    steps = {v: build(a.case, v) for v in ("planted", "fixed")}

    def enter(v):                                   # process-global state of variant v
        defaults()
        getattr(steps[v], "enter", lambda: None)()

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


def single(a):
    """One variant: warm-up, then 3 timed blocks; SUITE (their median) and RSS lines."""
    step = build(a.case, a.variant)                 # the fp32 cases set their own TF32
    for _ in range(a.warmup):
        step()
    per = max(1, a.steps // 3)
    times = sorted(timed(step, per) for _ in range(3))
    print(f"SUITE {a.case} {a.variant} {times[1]:.4f} {a.warmup + 3 * per}", flush=True)
    with open("/proc/self/statm") as fh:           # the resident set after the steps
        print(f"RSS {a.case} {a.variant} {int(fh.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')}",
              flush=True)


def main():
    global DRY
    ap = argparse.ArgumentParser(description="the held-out suite's programs (module docstring)")
    ap.add_argument("case", help="a case of CASES, or a clean model of CLEAN (variant clean)")
    ap.add_argument("variant", choices=["planted", "fixed", "clean", "paired"])
    ap.add_argument("--steps", type=int, help="timed steps (60; dry 3)")
    ap.add_argument("--warmup", type=int, help="untimed steps first (10; dry 1)")
    ap.add_argument("--pairs", type=int, help="paired: pairs of blocks (6; dry 2)")
    ap.add_argument("--block", type=int, help="paired: least steps a block (20; dry 1)")
    ap.add_argument("--min-block-ms", type=float,
                    help="paired: least time a block, more steps for fast steps (200; dry 0)")
    ap.add_argument("--dry", action="store_true",
                    help="tiny sizes, few steps, the CPU without CUDA (also APX_SUITE_DRY=1)")
    a = ap.parse_args()
    DRY = a.dry or os.environ.get("APX_SUITE_DRY") == "1"
    for k, full, tiny in (("steps", 60, 3), ("warmup", 10, 1), ("pairs", 6, 2), ("block", 20, 1),
                          ("min_block_ms", 200, 0)):
        if getattr(a, k) is None:
            setattr(a, k, pick(full, tiny))
    if not CUDA and not DRY:
        ap.error("needs CUDA (--dry runs without)")
    if (a.variant == "clean") != (a.case in CLEAN) or a.case not in (*CASES, *CLEAN):
        ap.error(f"{a.case} {a.variant}: the variants are planted, fixed and paired for a case "
                 f"of CASES, clean for {', '.join(CLEAN)}")
    if a.variant == "paired":
        if not PAIRABLE[a.case][0]:
            sys.exit(f"programs.py: {a.case} is not pairable: {PAIRABLE[a.case][1]}")
        if a.pairs < 1 or a.block < 1:
            ap.error("paired needs --pairs >= 1 and --block >= 1")
        paired(a)
    else:
        single(a)


if __name__ == "__main__":
    main()
