"""programs.py NAME [--steps N] [--warmup W] [--graph] - one training program of the collector's
overhead benchmark (bench/overhead/run.py starts one process per program and mode). Programs,
all written like what users run:

  resnet  ResNet-18-style CNN (BasicBlocks 2-2-2-2), bf16 autocast, channels_last, batch 128 of
          3x96x96, SGD with momentum
  gpt     6-layer GPT (d768, 12 heads, T512, batch 16, nn.MultiheadAttention, causal),
          bf16 autocast, AdamW
  hf      HuggingFace GPT2LMHeadModel(GPT2Config(n_layer=6)) built from its config (random
          weights), bf16 autocast, batch 8x512, AdamW
  adamloop  a 6-layer transformer encoder (d1024, batch 32x256), bf16 autocast, stepped by a
          hand-written per-tensor Adam loop (research code's habit: ~8 small kernels a tensor,
          580 a step); the suite's adam_by_hand ran 1.35-1.49x slower traced than not there
  tiny    tiny-kernel loop: 16 x (32x32 matmul, tanh, mul, add, softmax) + stack + sum a step;
          --graph replays the same step from a CUDA graph (the launch-bound fix);
          --vs-graph N times N pairs of adjacent eager and graph blocks in one process
          (E G G E ...) and prints VSGRAPH tiny {"eager": [ms...], "graph": [ms...]}: the
          graph's saving measured in one machine state (run.py's launch-bound check)

It warms up, then times --blocks blocks of --steps/--blocks steps, each between two
synchronizations, and prints one line
  BENCH <name> <ms per step, median of the blocks> <steps run in total> [<steps collected>]
(the median of blocks keeps one slow block - a GC pause, a flush - from moving the number).
BENCH_TORCH_PROFILER=1 runs the timed steps under torch.profiler (CPU + CUDA activities).

--toggle N: N pairs of blocks in one process, collected and not collected in the order
off, on, on, off, off, on, ... (so that a drift in time falls on both alike): before each
block torch.cuda.profiler.start() or stop() (cudaProfilerStart/Stop, which a profiler run
with a capture range follows: apx --capture-range=cudaProfilerApi, the floor with
APX_FLOOR_CAPTURE=1; without one they do nothing), or with BENCH_TORCH_PROFILER=1 a
torch.profiler session started before a run of collected blocks and stopped after it (its
event processing falls between blocks), then 2 untimed steps, then the timed block. It prints BENCH with the median of the "on" blocks, and
  BLOCKS <name> <json: {"off": [ms per step...], "on": [...], "cpu": [...], "sm_mhz": [...]}>
(the block times in block order by state; the CPU the main thread was on and the GPU's SM
clock after each block, in block order), from which run.py takes the ratio of each adjacent
off/on pair: the collector's cost measured seconds apart in one process, free of the
process-to-process spread (up to 1.8x on the H200 machine, the same program and mode)."""
import argparse
import json
import os
import time

T0 = time.perf_counter()
import torch  # noqa: E402  (after T0: the import's time is part of what TIMES reports)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

marks = [("import", time.perf_counter())]


def times_line():
    """TIMES: seconds spent importing, building, warming up and timing (run.py prints it)."""
    return "TIMES " + " ".join(f"{n}={t - p:.2f}" for (n, t), (_, p) in
                               zip(marks, [("start", T0)] + marks[:-1]))


def resnet(res=96):
    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return F.relu(y + (self.down(x) if self.down is not None else x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    model = nn.Sequential(*layers).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(128, 3, res, res, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def gpt(batch=16):
    d, heads, t, vocab, nlayer = 768, 12, 512, 16384, 6

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(t, d)
            self.layers = nn.ModuleList(Layer() for _ in range(nlayer))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx, mask):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for layer in self.layers:
                x = layer(x, mask)
            return self.head(self.ln(x))

    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx = torch.randint(0, vocab, (batch, t), device="cuda")
    tgt = torch.randint(0, vocab, (batch, t), device="cuda")
    mask = torch.triu(torch.full((t, t), float("-inf"), device="cuda"), 1)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(idx, mask)
            loss = F.cross_entropy(logits.view(-1, vocab), tgt.view(-1))
        loss.backward()
        opt.step()
    return step


def hf():
    from transformers import GPT2Config, GPT2LMHeadModel

    return hf_lm(GPT2LMHeadModel(GPT2Config(n_layer=6)), 8, 512)


def bert():
    """HuggingFace BertForMaskedLM(BertConfig(num_hidden_layers=6)) from its config, batch
    32x256 (tests/gpu/suite's clean model bert)."""
    from transformers import BertConfig, BertForMaskedLM

    return hf_lm(BertForMaskedLM(BertConfig(num_hidden_layers=6)), 32, 256)


def hf_lm(model, batch, seq):
    """A HuggingFace language model trained on random token ids (labels = inputs), bf16."""
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx = torch.randint(0, model.config.vocab_size, (batch, seq), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=idx, labels=idx).loss
        loss.backward()
        opt.step()
    return step


def adamloop():
    """Transformer encoder trained with a per-tensor Adam update written by hand (as
    tests/gpu/suite's adam_by_hand planted variant)."""
    import math

    layer = nn.TransformerEncoderLayer(1024, 8, 4096, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).cuda()
    ps = list(model.parameters())
    m1, m2 = [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]
    x = torch.randn(32, 256, 1024, device="cuda")
    lr, b1, b2, eps, state = 1e-4, 0.9, 0.999, 1e-8, {"t": 0}

    def step():
        for p in ps:
            p.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().square().mean()
        loss.backward()
        state["t"] += 1
        c1, c2 = 1 - b1 ** state["t"], 1 - b2 ** state["t"]
        with torch.no_grad():
            for p, mt, vt in zip(ps, m1, m2):
                g = p.grad
                mt.mul_(b1).add_(g, alpha=1 - b1)
                vt.mul_(b2).addcmul_(g, g, value=1 - b2)
                den = (vt.sqrt() / math.sqrt(c2)).add_(eps)
                p.addcdiv_(mt, den, value=-lr / c1)
    return step


def tiny(graph, both=False):
    a = torch.randn(16, 32, 32, device="cuda")
    b = torch.randn(16, 32, 32, device="cuda")
    c = torch.randn(16, 32, 32, device="cuda")
    out = torch.zeros((), device="cuda")

    def body():
        ys = [torch.softmax(torch.tanh(a[i] @ b[i]) * 0.5 + c[i], dim=-1) for i in range(16)]
        out.copy_(torch.stack(ys).sum())

    if not graph and not both:
        return body
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    return (body, g.replay) if both else g.replay


def vs_graph(pairs, steps):
    """--vs-graph: adjacent eager and graph blocks of the tiny loop, see the module's comment."""
    eager, graph = tiny(False, both=True)
    run = {"eager": eager, "graph": graph}
    per_block = max(1, steps // 8)
    times = {"eager": [], "graph": []}
    for _ in range(200):
        eager()
        graph()
    for i in range(2 * pairs):
        state = ("eager", "graph", "graph", "eager")[i % 4]
        for _ in range(2):
            run[state]()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per_block):
            run[state]()
        torch.cuda.synchronize()
        times[state].append(round((time.perf_counter() - t0) / per_block * 1e3, 5))
    print("VSGRAPH tiny " + json.dumps(times), flush=True)


def cpu_now():
    """The CPU this thread last ran on (/proc/thread-self/stat, field 39), -1 if unknown: the
    BLOCKS line records it after each block, to see whether a slow process is a slow CPU."""
    try:
        stat = open("/proc/thread-self/stat").read()
        return int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def sm_clock():
    """The GPU's SM clock now, in MHz (NVML through torch), -1 if unknown: recorded per block
    beside the CPU, to see whether a slow block is a slow GPU."""
    try:
        return int(torch.cuda.clock_rate())
    except Exception:   # noqa: BLE001  (no NVML, or a torch without it: not measured)
        return -1


def toggle(a, step, steps, warmup):
    """--toggle: alternate blocks with cudaProfilerStart/Stop; see the module's comment."""
    per_block = max(1, steps // 8)
    order = [("off", "on", "on", "off")[i % 4] for i in range(2 * a.toggle)]
    times = {"off": [], "on": []}
    cpus, clocks = [], []
    torch_prof = os.environ.get("BENCH_TORCH_PROFILER") == "1"
    prof = None
    for state in order:
        torch.cuda.synchronize()
        if torch_prof:      # torch.profiler: a session per run of collected blocks
            from torch.profiler import ProfilerActivity, profile

            if state == "on" and prof is None:
                prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                prof.start()
            elif state == "off" and prof is not None:
                prof.stop()     # builds its events here, outside the timed blocks
                prof = None
        elif state == "on":
            torch.cuda.profiler.start()
        else:
            torch.cuda.profiler.stop()
        for _ in range(2):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per_block):
            step()
        torch.cuda.synchronize()
        times[state].append((time.perf_counter() - t0) / per_block * 1e3)
        cpus.append(cpu_now())
        clocks.append(sm_clock())
    if prof is not None:
        prof.stop()
    torch.cuda.profiler.stop()
    on = sorted(times["on"])
    total = warmup + (per_block + 2) * len(order)
    collected = (per_block + 2) * len(times["on"])   # steps run while collecting
    print(f"BENCH {a.name} {on[len(on) // 2]:.4f} {total} {collected}", flush=True)
    blocks = {k: [round(x, 5) for x in v] for k, v in times.items()}
    blocks["cpu"], blocks["sm_mhz"] = cpus, clocks
    print(f"BLOCKS {a.name} " + json.dumps(blocks), flush=True)
    marks.append(("timed", time.perf_counter()))
    print(times_line(), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=["resnet", "gpt", "hf", "tiny", "adamloop"])
    ap.add_argument("--steps", type=int, default=0, help="timed steps (default: per program)")
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--vs-graph", type=int, default=0, metavar="N",
                    help="tiny only: N pairs of eager / graph blocks in one process")
    ap.add_argument("--toggle", type=int, default=0, metavar="N",
                    help="N pairs of collected / uncollected blocks (see above)")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    defaults = {"resnet": (120, 20), "gpt": (80, 15), "hf": (60, 15), "tiny": (1500, 200),
                "adamloop": (80, 15)}
    steps = a.steps or defaults[a.name][0]
    warmup = a.warmup or defaults[a.name][1]
    if a.vs_graph and a.name == "tiny":
        vs_graph(a.vs_graph, steps)
        return
    if a.name == "tiny":
        step = tiny(a.graph)
    else:
        with torch.device("cuda"):     # parameters made on the GPU: no CPU init, no copy
            step = globals()[a.name]()
    torch.cuda.synchronize()
    marks.append(("build", time.perf_counter()))
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    marks.append(("warmup", time.perf_counter()))
    if a.toggle:
        toggle(a, step, steps, warmup)
        return
    prof = None
    if os.environ.get("BENCH_TORCH_PROFILER") == "1":
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
        for _ in range(3):      # the profiler's own start-up stays out of the timed steps
            step()
        torch.cuda.synchronize()
    per_block = max(1, steps // a.blocks)
    times = []
    for _ in range(a.blocks):
        t0 = time.perf_counter()
        for _ in range(per_block):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / per_block)
    times.sort()
    marks.append(("timed", time.perf_counter()))
    print(times_line(), flush=True)
    total = warmup + per_block * a.blocks + (3 if prof else 0)
    print(f"BENCH {a.name}{'-graph' if a.graph else ''} {times[len(times) // 2] * 1e3:.4f} "
          f"{total}", flush=True)
    if prof:    # its trace is not wanted: skip the seconds torch.profiler takes to build it
        os._exit(0)


if __name__ == "__main__":
    main()
