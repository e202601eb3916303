#!/usr/bin/env python3
# test_backward_site.py SRCDIR [PYTHON] - the --python-backward nvtx part of apx_site.py
# (class _Backward; docs/collector.md, "Backward kernels") run inside a real torch without a
# GPU: Debian's python3 with python3-torch 1.13 (CPU build). ctest pyhook-backward; exit 77
# when that python has no torch.
#
# A CPU build cannot enter PyTorch's NVTX profiler ("Can't use NVTX profiler - PyTorch was
# compiled without CUDA"), so the checks are: the hook is armed at `import torch` and does
# nothing before CUDA is initialised (a CPU program never is: its losses are those of a run
# without apx); when torch.cuda._lazy_init returns with CUDA initialised (stood in for here), it
# enters emit_nvtx(record_shapes=False) on that thread - with the real torch 1.13 this reaches
# the NVTX profiler's own check, which refuses on a CPU build, and the hook says so once and the
# program runs on with the same losses; with emit_nvtx stood in for, it is entered once (not
# again on later _lazy_init calls, nor from inside its own __enter__), and a program's own
# torch.autograd.profiler.profile / emit_nvtx stops it first (said once) and works.
import os
import shutil
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
PY = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/python3"
SITE = os.path.join(SRC, "lib", "collector", "py", "apx_site.py")
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


TRAIN = r'''
import sys
import torch
torch.manual_seed(0)
MODE = sys.argv[1]


def train():
    # a tiny transformer block, a few Adam steps: the losses, exactly
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                             dropout=0.0, batch_first=True)
    head = torch.nn.Linear(32, 8)
    opt = torch.optim.Adam(list(layer.parameters()) + list(head.parameters()), lr=1e-3)
    x = torch.randn(4, 16, 32)
    y = torch.randint(0, 8, (4, 16))
    out = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(head(layer(x)).reshape(-1, 8), y.reshape(-1))
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


site = sys.modules.get("apx_site")
armed = hasattr(torch.cuda._lazy_init, "__wrapped__")
print("ARMED", armed, site is not None and site._backward is not None)

if MODE == "real":
    # CUDA "initialised": the hook enters the real emit_nvtx, which a CPU build refuses
    torch.cuda._lazy_init.__wrapped__ = lambda *a, **k: None
    torch.cuda.is_initialized = lambda: True
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda._lazy_init()
    torch.cuda._lazy_init()
elif MODE == "fake":
    entered = []

    class FakeNvtx:
        def __init__(self, enabled=True, record_shapes=False):
            self.record_shapes = record_shapes

        def __enter__(self):
            torch.cuda._lazy_init()     # as torch.cuda.synchronize() does inside the real one
            entered.append(("enter", self.record_shapes))
            return self

        def __exit__(self, *exc):
            entered.append(("exit",))
            return False
    torch.autograd.profiler.emit_nvtx = FakeNvtx
    torch.cuda._lazy_init.__wrapped__ = lambda *a, **k: None
    torch.cuda.is_initialized = lambda: True
    torch.cuda._lazy_init()
    torch.cuda._lazy_init()
    print("ENTERED", entered)
    with torch.autograd.profiler.profile() as prof:    # the program's own profiler
        torch.ones(3).sum()
    print("PROFILED", len(prof.function_events) > 0)
    print("AFTER", entered)
print("LOSSES", " ".join(repr(v) for v in train()))
'''


def run(tmp, mode, hook):
    site = os.path.join(tmp, "site")
    os.makedirs(site, exist_ok=True)
    shutil.copy(SITE, os.path.join(site, "sitecustomize.py"))
    script = os.path.join(tmp, "train.py")
    with open(script, "w") as f:
        f.write(TRAIN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("APX_")}
    env.pop("CUDA_INJECTION64_PATH", None)
    env.pop("LD_PRELOAD", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if hook:
        env.update({"PYTHONPATH": site, "APX_PY_HOOKS": "1", "APX_PY_BACKWARD": "1",
                    "APX_MEMORY_SAMPLING_HZ": "0"})
    else:
        env.pop("PYTHONPATH", None)
    p = subprocess.run([PY, script, mode], env=env, capture_output=True, text=True, timeout=300)
    lines = {}
    for line in p.stdout.splitlines():
        key, _, rest = line.partition(" ")
        lines[key] = rest
    return p, lines


def main():
    if subprocess.run([PY, "-c", "import torch"], capture_output=True).returncode != 0:
        print("skip: %s has no torch" % PY)
        return 77
    tmp = tempfile.mkdtemp(prefix="apx-bwd-")
    try:
        p0, base = run(tmp, "plain", hook=False)
        check(p0.returncode == 0 and "LOSSES" in base, "the program runs without apx")
        if p0.returncode:
            print(p0.stderr)

        p1, cpu = run(tmp, "plain", hook=True)
        check(p1.returncode == 0, "the program runs with the hook")
        check(cpu.get("ARMED") == "True True", "armed at import torch: _lazy_init wrapped (%r)"
              % cpu.get("ARMED"))
        check(cpu.get("LOSSES") == base.get("LOSSES"),
              "CUDA never initialised: the same losses as without apx")
        check("[apx]" not in p1.stderr, "nothing said while CUDA is not initialised (%r)"
              % p1.stderr[-300:])

        p2, real = run(tmp, "real", hook=True)
        check(p2.returncode == 0, "CUDA initialised (stood in for), real emit_nvtx: runs on")
        said = [ln for ln in p2.stderr.splitlines() if ln.startswith("[apx] python-backward")]
        check(len(said) == 1 and "emit_nvtx did not start" in said[0] and
              "NVTX profiler" in said[0],
              "the real emit_nvtx was entered and reached PyTorch's NVTX profiler, which a CPU "
              "build refuses; said once (%r)" % said)
        check(real.get("LOSSES") == base.get("LOSSES"), "the same losses after the refusal")

        p3, fake = run(tmp, "fake", hook=True)
        check(p3.returncode == 0, "emit_nvtx stood in for: runs")
        if p3.returncode:
            print(p3.stderr)
        check(fake.get("ENTERED") == "[('enter', False)]",
              "entered once, record_shapes=False, not again from later _lazy_init calls or its "
              "own __enter__ (%r)" % fake.get("ENTERED"))
        check(fake.get("PROFILED") == "True", "the program's own profiler works")
        check(fake.get("AFTER") == "[('enter', False), ('exit',)]",
              "ours was stopped before the program's profiler (%r)" % fake.get("AFTER"))
        said = [ln for ln in p3.stderr.splitlines() if ln.startswith("[apx] python-backward")]
        check(len(said) == 1 and "torch.autograd.profiler.profile" in said[0] or
              len(said) == 1 and "torch.profiler" in said[0],
              "the stop said once (%r)" % said)
        check(fake.get("LOSSES") == base.get("LOSSES"), "the same losses with the hook on")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
