#!/usr/bin/env python3
# test_tune_site.py SRCDIR [PYTHON] - apx tune's fixes in apx_site.py (APX_TUNE_FIXES,
# APX_TUNE_REPORT; docs/collector.md, "Python hooks", "Fixes for apx tune") inside a real torch
# without a GPU: Debian's python3 with python3-torch 1.13 (CPU build). ctest pyhook-tune; exit 77
# when that python has no torch.
#
# Each run is a child python with PYTHONPATH = a temp folder holding apx_site.py as
# sitecustomize.py, then a folder with a user's own sitecustomize (which must still run). The
# program builds DataLoaders, an optimizer with foreach=False, calls zero_grad(set_to_none=False),
# turns TF32 off in every way torch offers, calls torch.cuda.empty_cache(), and prints what it
# sees; each fix is checked against the same program without APX_TUNE_FIXES (unchanged), with the
# stderr lines and the report. A CPU torch has no CUDA: pin_memory must not be applied and say why
# once; its DataLoader half is then checked with torch.cuda.is_available stood in for, and its
# Tensor.to / Tensor.cuda half (installed only in a CUDA build) on stand-in copy methods.
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
PY = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/python3"
SITE = os.path.join(SRC, "lib", "collector", "py", "apx_site.py")
ALL = "tf32,pin_memory,workers,foreach,set_to_none,no_empty_cache"
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


PROG = r'''
import os
import subprocess
import sys
import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

MODE = sys.argv[1]
torch.manual_seed(0)
if MODE == "fakecuda":
    torch.cuda.is_available = lambda: True      # before the first DataLoader

ds = TensorDataset(torch.arange(12.0))
plain = DataLoader(ds, batch_size=4)
print("PLAIN", plain.pin_memory, plain.num_workers, plain.persistent_workers)
mine = DataLoader(ds, 4, False, None, None, 2, pin_memory=True)    # the program's own choices
print("MINE", mine.pin_memory, mine.num_workers, mine.persistent_workers)
if MODE != "fakecuda":
    print("DATA", sorted(float(v) for b in plain for v in b[0]))


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(6))


stream = DataLoader(Stream(), batch_size=3)
print("STREAM", stream.num_workers)

model = torch.nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
print("FOREACH", opt.defaults["foreach"])
adam = torch.optim.Adam(model.parameters())
print("DEFAULT", adam.defaults["foreach"])
model(torch.ones(2, 3)).sum().backward()
opt.step()
opt.zero_grad(set_to_none=False)
print("OPTGRAD", model.weight.grad is None)
model(torch.ones(2, 3)).sum().backward()
model.zero_grad(set_to_none=False)
print("MODGRAD", model.weight.grad is None)
model(torch.ones(2, 3)).sum().backward()
opt.zero_grad(set_to_none=True)
print("NONE", model.weight.grad is None)

print("TF32AT", torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
      torch.get_float32_matmul_precision())
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
print("TF32", torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
      torch.get_float32_matmul_precision())
with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
    print("FLAGS", torch.backends.cudnn.allow_tf32)

torch.cuda.empty_cache()
torch.cuda.empty_cache()
print("EMPTY ok")

if MODE == "multi":
    pid = os.fork()         # a forked child that changes nothing: it adds nothing to the report
    if pid == 0:
        sys.exit(0)
    os.waitpid(pid, 0)
    # another process of the run (as torchrun's ranks are): its counts are added
    subprocess.run([sys.executable, "-c",
                    "import torch\nfor _ in range(3): torch.cuda.empty_cache()"], check=True)
print("USERSITE", "apx_test_user_site" in sys.modules)
'''

COPIES = r'''
import sys
import torch
site = sys.modules["apx_site"]
seen = []


def rec_to(self, *args, **kwargs):
    seen.append(("to", args, kwargs.get("non_blocking")))
    return self


def rec_cuda(self, *args, **kwargs):
    seen.append(("cuda", args, kwargs.get("non_blocking")))
    return self


torch.Tensor.to, torch.Tensor.cuda = rec_to, rec_cuda
torch.Tensor.is_pinned = lambda self: getattr(self, "_pinned", False)
site._tune.wrap_tensor_copies(torch)
x = torch.ones(2)
x._pinned = True
y = torch.ones(2)
x.to("cuda:0")
x.to(device=torch.device("cuda"))
x.to(0)
x.to(torch.float64)
x.to("cuda", torch.float32, True)
x.cuda()
y.to("cuda")
y.cuda()
for s in seen:
    print("COPY", s[0], s[2])
'''


# A stand-in for torch 2.9+'s TF32 settings (the installed torch is older): torch.backends as
# torch builds it (PropModule, ContextProp, _FP32Precision, cuBLASModule, cudnn's set_flags /
# flags, the generic torch.backends.fp32_precision) over a copy of ATen's Context: fp32_precision
# per (backend, op) looked up op -> backend's "all" -> generic, the legacy setters writing the new
# settings, and the checks that raise on "a mix of the legacy and new APIs".
FAKE29 = r"""
import sys
import types
from contextlib import contextmanager

__version__ = "2.11.0+apxfake"


class _Context:
    def __init__(self):
        self.p = {("generic", "all"): "ieee", ("cuda", "all"): "none",
                  ("cuda", "matmul"): "none", ("cuda", "conv"): "tf32",
                  ("cuda", "rnn"): "tf32", ("mkldnn", "all"): "none",
                  ("mkldnn", "matmul"): "none", ("mkldnn", "conv"): "none",
                  ("mkldnn", "rnn"): "none"}
        self.matmul_precision = "highest"       # the legacy float32 matmul precision
        self.allow_tf32_cudnn = True

    def get(self, backend, op):                 # Context::float32Precision
        p = self.p[(backend, op)]
        if p == "none":
            p = self.p[(backend, "all")]
        if p == "none":
            p = self.p[("generic", "all")]
        return p

    def set(self, backend, op, p):
        if p not in ("none", "ieee", "tf32", "bf16"):
            raise RuntimeError("Unknown precision: " + str(p))
        if backend == "cuda" and p == "bf16":
            raise RuntimeError("backend 'cuda' does not support precision 'bf16'")
        self.p[(backend, op)] = p

    def allow_tf32_cublas(self):                # Context::allowTF32CuBLAS
        legacy = self.matmul_precision != "highest"
        new = self.get("cuda", "matmul") == "tf32"
        if legacy != new:
            raise RuntimeError("mix of the legacy and new APIs (cuBLAS)")
        return new

    def set_allow_tf32_cublas(self, b):
        self.matmul_precision = "high" if b else "highest"
        self.set("cuda", "matmul", "tf32" if b else "ieee")

    def allow_tf32_cudnn_all(self):             # Context::allowTF32CuDNN() without an op
        rnn = self.get("cuda", "rnn") == "tf32"
        conv = self.get("cuda", "conv") == "tf32"
        if not (rnn == conv == self.allow_tf32_cudnn):
            raise RuntimeError("mix of the legacy and new APIs (cuDNN)")
        return self.allow_tf32_cudnn

    def set_allow_tf32_cudnn(self, b):
        self.set("cuda", "rnn", "tf32" if b else "none")
        self.set("cuda", "conv", "tf32" if b else "none")
        self.allow_tf32_cudnn = b

    def set_matmul_precision(self, s):
        p = {"highest": ("ieee", "ieee"), "high": ("tf32", "tf32"), "medium": ("tf32", "bf16")}
        if s in p:
            self.matmul_precision = s
            self.set("cuda", "matmul", p[s][0])
            self.set("mkldnn", "matmul", p[s][1])

    def matmul_precision_checked(self):         # Context::float32MatmulPrecision
        if self.get("cuda", "matmul") == "tf32" and self.matmul_precision == "highest":
            raise RuntimeError("mix of the legacy and new APIs (matmul precision)")
        return self.matmul_precision


_C = _Context()


def set_float32_matmul_precision(precision):
    _C.set_matmul_precision(precision)


def get_float32_matmul_precision():
    return _C.matmul_precision_checked()


def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


class ContextProp:
    def __init__(self, getter, setter):
        self.getter, self.setter = getter, setter

    def __get__(self, obj, objtype):
        return self.getter()

    def __set__(self, obj, val):
        self.setter(val)


class PropModule(types.ModuleType):
    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)


class _FP32Precision:
    def __init__(self, backend, op):
        self.backend = backend
        self.op = op

    def __setattr__(self, name, value):
        if name == "fp32_precision":
            _C.set(self.backend, self.op, value)
        elif name in ("backend", "op"):
            super().__setattr__(name, value)
        else:
            raise AttributeError("Unknown attribute " + name)

    def __getattr__(self, name):
        if name == "fp32_precision":
            return _C.p[(self.backend, self.op)]
        raise AttributeError("Unknown attribute " + name)


def _prop(backend, op):
    return ContextProp(lambda: _C.p[(backend, op)], lambda v: _C.set(backend, op, v))


class cuBLASModule:
    def __getattr__(self, name):
        if name == "allow_tf32":
            return _C.allow_tf32_cublas()
        if name == "fp32_precision":
            return _C.p[("cuda", "matmul")]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            return _C.set_allow_tf32_cublas(value)
        if name == "fp32_precision":
            return _C.set("cuda", "matmul", value)
        raise AttributeError("Unknown attribute " + name)


_backends = _module("torch.backends")


def _generic_set_flags(_fp32_precision="none"):
    orig = (_C.p[("generic", "all")],)
    if _fp32_precision is not None:
        _C.set("generic", "all", _fp32_precision)
    return orig


@contextmanager
def _generic_flags(fp32_precision="none"):
    orig = _backends.set_flags(fp32_precision)
    try:
        yield
    finally:
        _backends.set_flags(*orig)


_backends.set_flags, _backends.flags = _generic_set_flags, _generic_flags


class GenericModule(PropModule):
    fp32_precision = _prop("generic", "all")


_cuda = _module("torch.backends.cuda")
_cuda.matmul = cuBLASModule()
_cudnn = _module("torch.backends.cudnn")


def _cudnn_set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None,
                     _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    orig = (None, None, None, None, _C.allow_tf32_cudnn, _C.p[("cuda", "all")])
    if _allow_tf32 is not None:
        _C.set_allow_tf32_cudnn(_allow_tf32)
    if _fp32_precision is not None:
        _C.set("cuda", "all", _fp32_precision)
    return orig


@contextmanager
def _cudnn_flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
                 allow_tf32=True, fp32_precision="none"):
    orig = _cudnn.set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                            fp32_precision)
    try:
        yield
    finally:
        _cudnn.set_flags(*orig)


_cudnn.set_flags, _cudnn.flags = _cudnn_set_flags, _cudnn_flags


class CudnnModule(PropModule):
    allow_tf32 = ContextProp(lambda: _C.allow_tf32_cudnn, _C.set_allow_tf32_cudnn)
    conv = _FP32Precision("cuda", "conv")
    rnn = _FP32Precision("cuda", "rnn")
    fp32_precision = _prop("cuda", "all")


_mkldnn = _module("torch.backends.mkldnn")
_mkldnn.matmul = _FP32Precision("mkldnn", "matmul")
_mkldnn.conv = _FP32Precision("mkldnn", "conv")
_backends.cuda, _backends.mkldnn = _cuda, _mkldnn
_backends.cudnn = sys.modules["torch.backends.cudnn"] = CudnnModule(_cudnn, "torch.backends.cudnn")
backends = sys.modules["torch.backends"] = GenericModule(_backends, "torch.backends")


def effective():
    "What cuBLAS and cuDNN would run fp32 in; 'mixed' where torch's own checks would raise."
    def checked(fn):
        try:
            return fn()
        except RuntimeError:
            return "mixed"
    return ("matmul=%s conv=%s rnn=%s cublas=%s cudnn=%s precision=%s mkldnn_conv=%s"
            % (_C.get("cuda", "matmul"), _C.get("cuda", "conv"), _C.get("cuda", "rnn"),
               checked(_C.allow_tf32_cublas), checked(_C.allow_tf32_cudnn_all),
               checked(get_float32_matmul_precision), _C.get("mkldnn", "conv")))
"""

# The program for FAKE29: turns TF32 off through the new API every way there is, and prints
# what the ops would run in after each.
NEWAPI = r"""
import sys
import torch

print("AT", torch.effective())
torch.backends.cuda.matmul.fp32_precision = "ieee"
print("MATMUL", torch.effective(), torch.backends.cuda.matmul.fp32_precision)
torch.backends.cudnn.conv.fp32_precision = "ieee"
torch.backends.cudnn.rnn.fp32_precision = "none"
print("CONV", torch.effective(), torch.backends.cudnn.conv.fp32_precision,
      torch.backends.cudnn.rnn.fp32_precision)
torch.backends.cudnn.fp32_precision = "ieee"
print("CUDNN", torch.effective(), torch.backends.cudnn.fp32_precision)
torch.backends.fp32_precision = "ieee"
print("GENERIC", torch.effective(), torch.backends.fp32_precision)
with torch.backends.cudnn.flags(enabled=None, allow_tf32=None, fp32_precision="ieee"):
    print("FLAGS", torch.effective())
with torch.backends.flags(fp32_precision="ieee"):
    print("GFLAGS", torch.effective())
torch.backends.mkldnn.conv.fp32_precision = "ieee"
print("MKLDNN", torch.backends.mkldnn.conv.fp32_precision)
torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
print("LEGACY", torch.effective())
try:
    torch.backends.cuda.matmul.fp32_precision = "bf16"
    print("BF16 accepted")
except RuntimeError as err:
    print("BF16 refused", err)
print("USERSITE", "apx_test_user_site" in sys.modules)
"""

def run(tmp, args, fixes=None, report=None, prog=PROG, site=True, fake=None, env=None):
    sitedir = os.path.join(tmp, "site")
    userdir = os.path.join(tmp, "user")
    os.makedirs(sitedir, exist_ok=True)
    os.makedirs(userdir, exist_ok=True)
    shutil.copy(SITE, os.path.join(sitedir, "sitecustomize.py"))
    with open(os.path.join(userdir, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.modules['apx_test_user_site'] = sys\n")
    script = os.path.join(tmp, "prog.py")
    with open(script, "w") as f:
        f.write(prog)
    extra, env = env or {}, {k: v for k, v in os.environ.items() if not k.startswith("APX_")}
    for k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "PYTHONPATH"):
        env.pop(k, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = (sitedir + os.pathsep + userdir) if site else userdir
    if fake is not None:                        # a stand-in torch package, first on the path
        fakedir = os.path.join(tmp, "fake", "torch")
        os.makedirs(fakedir, exist_ok=True)
        with open(os.path.join(fakedir, "__init__.py"), "w") as f:
            f.write(fake)
        env["PYTHONPATH"] += os.pathsep + os.path.dirname(fakedir)
    env["APX_MEMORY_SAMPLING_HZ"] = "0"
    if fixes is not None:
        env["APX_TUNE_FIXES"] = fixes
    if report is not None:
        env["APX_TUNE_REPORT"] = report
    env.update(extra)
    p = subprocess.run([PY, script] + args, env=env, capture_output=True, text=True,
                       timeout=240, cwd=tmp)
    out = {}
    for line in p.stdout.splitlines():
        key, _, rest = line.partition(" ")
        out.setdefault(key, rest)
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("[apx]")]
    return p, out, said


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as err:
        return {"error": str(err)}


def main():
    if subprocess.run([PY, "-c", "import torch"], capture_output=True).returncode != 0:
        print("skip: %s has no torch" % PY)
        return 77
    tmp = tempfile.mkdtemp(prefix="apx-tune-")
    try:
        return cases(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cases(tmp):
    workers = min(4, max(1, (os.cpu_count() or 2) // 2))
    rep = os.path.join(tmp, "report.json")

    # without apx, and with apx_site.py but no fixes: the same, nothing said, no report
    p0, base, _ = run(tmp, ["plain"], site=False)
    check(p0.returncode == 0 and "USERSITE" in base, "the program runs without apx")
    if p0.returncode:
        print(p0.stderr)
    check(base.get("USERSITE") == "True", "the user's sitecustomize runs without apx")
    for fixes in (None, ""):
        p1, off, said = run(tmp, ["plain"], fixes=fixes, report=rep)
        check(p1.returncode == 0 and p1.stdout == p0.stdout,
              "APX_TUNE_FIXES %s: the same output as without apx"
              % ("unset" if fixes is None else "empty"))
        check(p1.stderr == p0.stderr and not said, "... and nothing said (%r)" % said)
        check(not os.path.exists(rep), "... and no report written")
    check(base.get("PLAIN") == "False 0 False" and base.get("FOREACH") == "False" and
          base.get("OPTGRAD") == "False" and base.get("TF32") == "False False highest",
          "the program's own settings take effect without fixes (%r)" % base)

    # all fixes, and an unknown name
    p2, on, said = run(tmp, ["plain"], fixes=ALL + ", bogus,tf32", report=rep)
    check(p2.returncode == 0, "all fixes: the program runs")
    if p2.returncode:
        print(p2.stderr)
    tune = [s for s in said if s.startswith("[apx] tune: ")]
    check(len(tune) == len(said), "everything said starts with '[apx] tune: ' (%r)" % said)

    def lines(prefix):
        return [s for s in said if s.startswith("[apx] tune: " + prefix)]
    check(len(lines("unknown fix 'bogus' ignored")) == 1, "the unknown fix said once (%r)"
          % lines("unknown"))
    check(on.get("USERSITE") == "True", "the user's sitecustomize still runs")

    # tf32
    check(on.get("TF32AT") == "True True high", "tf32: on at import torch (%r)"
          % on.get("TF32AT"))
    check(on.get("TF32") == "True True high" and on.get("FLAGS") == "True",
          "tf32: the program's allow_tf32 = False, 'highest' and cudnn.flags(allow_tf32=False) "
          "ignored (%r, %r)" % (on.get("TF32"), on.get("FLAGS")))
    check(len(lines("tf32: TF32 on for matmul and cuDNN")) == 1 and
          len(lines("tf32: the program's own 'off' ignored")) == 1,
          "tf32: applied and overridden, each said once (%r)" % lines("tf32"))
    # pin_memory: no CUDA in this torch
    check(on.get("PLAIN", "").split()[0] == "False" and on.get("MINE", "").split()[0] == "True",
          "pin_memory: not applied without CUDA; the program's own pin_memory=True kept (%r, %r)"
          % (on.get("PLAIN"), on.get("MINE")))
    check(lines("pin_memory") == ["[apx] tune: pin_memory: not applied: CUDA is not available "
                                  "(torch.cuda.is_available() is False)"],
          "pin_memory: why not, said once for three DataLoaders (%r)" % lines("pin_memory"))
    # workers
    check(on.get("PLAIN", "").split()[1:] == [str(workers), "True"],
          "workers: num_workers=0 -> %d, persistent_workers=True (%r)"
          % (workers, on.get("PLAIN")))
    check(on.get("MINE") == base.get("MINE"), "workers: the program's own num_workers=2 kept (%r)"
          % on.get("MINE"))
    check(on.get("DATA") == base.get("DATA"), "workers: the same data through the workers")
    check(on.get("STREAM") == "0", "workers: an IterableDataset left with num_workers=0")
    check(len(lines("workers: DataLoader(num_workers=0) made num_workers=%d" % workers)) == 1 and
          len(lines("workers: a DataLoader of an IterableDataset left")) == 1,
          "workers: said once each (%r)" % lines("workers"))
    # foreach
    check(on.get("FOREACH") == "True" and on.get("DEFAULT") == base.get("DEFAULT") == "None",
          "foreach: SGD(foreach=False) -> True; Adam() with the default left alone (%r, %r)"
          % (on.get("FOREACH"), on.get("DEFAULT")))
    check(lines("foreach") == ["[apx] tune: foreach: torch.optim.SGD(foreach=False) made "
                               "foreach=True (later optimizers so made are counted)"],
          "foreach: said once (%r)" % lines("foreach"))
    # set_to_none
    check(on.get("OPTGRAD") == "True" and on.get("MODGRAD") == "True" and
          base.get("OPTGRAD") == "False" and base.get("MODGRAD") == "False" and
          on.get("NONE") == base.get("NONE") == "True",
          "set_to_none: Optimizer.zero_grad / Module.zero_grad(set_to_none=False) free the "
          "gradients (%r, %r)" % (on.get("OPTGRAD"), on.get("MODGRAD")))
    check(len(lines("set_to_none: ")) == 1, "set_to_none: said once (%r)" % lines("set_to_none"))
    # no_empty_cache
    check(on.get("EMPTY") == "ok", "no_empty_cache: torch.cuda.empty_cache() callable")
    check(lines("no_empty_cache") == [
        "[apx] tune: no_empty_cache: torch.cuda.empty_cache() made a no-op (the count is said "
        "at exit)", "[apx] tune: no_empty_cache: torch.cuda.empty_cache() skipped 2 times"],
        "no_empty_cache: said once, and the count at exit (%r)" % lines("no_empty_cache"))

    doc = load(rep)
    fx = doc.get("fixes", {})
    check(sorted(fx) == sorted(ALL.split(",")) and doc.get("unknown") == ["bogus"] and
          doc.get("processes") == 1, "report: every fix once, the unknown name, one process "
          "(%r)" % doc)
    check(fx.get("tf32", {}).get("applied") is True and fx["tf32"].get("overrides") == 4 and
          fx["tf32"].get("overrides_allow_tf32") == 4 and fx["tf32"].get("api") == "allow_tf32"
          and "overrides_fp32_precision" not in fx["tf32"],
          "report: tf32 applied through allow_tf32 (this torch has no fp32_precision), 4 "
          "overrides (%r)" % fx.get("tf32"))
    check(fx.get("pin_memory", {}).get("applied") is False and
          "CUDA is not available" in fx["pin_memory"].get("note", ""),
          "report: pin_memory not applied, and why (%r)" % fx.get("pin_memory"))
    check(fx.get("workers", {}).get("applied") is True and fx["workers"].get("count") == 1 and
          fx["workers"].get("iterable_left") == 1, "report: workers once, one IterableDataset "
          "left (%r)" % fx.get("workers"))
    check(fx.get("foreach", {}).get("count") == 1 and fx["foreach"].get("applied") is True,
          "report: foreach once (%r)" % fx.get("foreach"))
    check(fx.get("set_to_none", {}).get("count") == 2, "report: set_to_none twice (%r)"
          % fx.get("set_to_none"))
    check(fx.get("no_empty_cache", {}).get("count") == 2, "report: empty_cache skipped twice (%r)"
          % fx.get("no_empty_cache"))
    check(not [n for n in os.listdir(tmp) if ".tmp." in n], "report: no temp file left")

    # one fix alone: only it applies
    os.unlink(rep)
    p3, one, said = run(tmp, ["plain"], fixes="foreach", report=rep)
    check(p3.returncode == 0 and one.get("FOREACH") == "True" and
          one.get("PLAIN") == base.get("PLAIN") and one.get("OPTGRAD") == "False" and
          one.get("TF32") == base.get("TF32"), "foreach alone: only foreach changes (%r)" % one)
    check(len(said) == 1, "foreach alone: one line said (%r)" % said)
    check(sorted(load(rep).get("fixes", {})) == ["foreach"], "foreach alone: the report has it "
          "alone")

    # a fix that finds nothing to change: applied false, and why
    os.unlink(rep)
    p4, _, said = run(tmp, ["plain"], fixes="workers", report=rep,
                      prog="import torch\nprint('USERSITE x')\n")
    w = load(rep).get("fixes", {}).get("workers", {})
    check(p4.returncode == 0 and w.get("applied") is False and w.get("count") == 0 and
          w.get("note") == "no DataLoader with num_workers=0 was created",
          "workers with no DataLoader: applied false, and why (%r)" % w)
    os.unlink(rep)
    p4, _, said = run(tmp, ["plain"], fixes="tf32", report=rep, prog="print('USERSITE x')\n")
    t = load(rep).get("fixes", {}).get("tf32", {})
    check(p4.returncode == 0 and t.get("applied") is False and
          t.get("note") == "torch was not imported" and not said,
          "no torch imported: nothing said, the report says why (%r)" % t)

    # pin_memory with CUDA stood in for: DataLoader(pin_memory=True), said once
    os.unlink(rep)
    p5, fake, said = run(tmp, ["fakecuda"], fixes="pin_memory", report=rep)
    check(p5.returncode == 0 and fake.get("PLAIN") == "True 0 False" and
          fake.get("MINE") == "True 2 False",
          "pin_memory with CUDA: DataLoader(pin_memory=True), the rest kept (%r, %r)"
          % (fake.get("PLAIN"), fake.get("MINE")))
    if p5.returncode:
        print(p5.stderr)
    pm = load(rep).get("fixes", {}).get("pin_memory", {})
    check(len(said) == 1 and "made pin_memory=True" in said[0] and pm.get("loaders") == 2 and
          pm.get("applied") is True, "pin_memory: said once, 2 loaders in the report (%r, %r)"
          % (said, pm))

    # pin_memory's copies: pinned CPU tensor to CUDA -> non_blocking=True; others unchanged
    p6, _, said = run(tmp, [], fixes="pin_memory", prog=COPIES)
    copies = [ln for ln in p6.stdout.splitlines() if ln.startswith("COPY")]
    check(p6.returncode == 0 and copies == [
        "COPY to True", "COPY to True", "COPY to True", "COPY to None", "COPY to None",
        "COPY cuda True", "COPY to None", "COPY cuda None"],
        "pin_memory: pinned .to('cuda:0') / .to(device=) / .to(0) / .cuda() made non_blocking; "
        ".to(dtype), a positional non_blocking and unpinned tensors unchanged (%r)" % copies)
    if p6.returncode:
        print(p6.stderr)
    check(len([s for s in said if "non_blocking=True" in s]) == 1, "... said once (%r)" % said)

    # several processes of one run: counts added, a forked child that changed nothing adds none
    os.unlink(rep)
    p7, multi, said = run(tmp, ["multi"], fixes="no_empty_cache,tf32", report=rep)
    doc = load(rep)
    n = doc.get("fixes", {}).get("no_empty_cache", {})
    check(p7.returncode == 0 and doc.get("processes") == 2 and n.get("count") == 5 and
          doc["fixes"].get("tf32", {}).get("count") == 2 and
          doc["fixes"]["tf32"].get("api") == "allow_tf32",
          "two processes: their counts added in one report (%r)" % doc)
    if p7.returncode:
        print(p7.stderr)

    # torch 2.9+'s fp32_precision (a stand-in torch, FAKE29): without the fix the program's
    # "ieee" takes effect; with it every CUDA op stays TF32 through torch's own checks, the
    # mkldnn (CPU) settings and an invalid value are left alone, and the report says which API
    # each override came through
    p9, new0, said = run(tmp, [], prog=NEWAPI, fake=FAKE29)
    check(p9.returncode == 0 and new0.get("USERSITE") == "True", "fp32_precision: the program "
          "runs on the stand-in torch without apx")
    if p9.returncode:
        print(p9.stderr)
    check(new0.get("AT") == "matmul=ieee conv=tf32 rnn=tf32 cublas=False cudnn=True "
          "precision=highest mkldnn_conv=ieee" and
          new0.get("MATMUL", "").startswith("matmul=ieee ") and
          new0.get("CONV", "").startswith("matmul=ieee conv=ieee rnn=ieee cublas=False "
                                          "cudnn=mixed") and
          new0.get("LEGACY", "").startswith("matmul=ieee "),
          "fp32_precision: without the fix the program's 'ieee' takes effect (%r)" % new0)
    if os.path.exists(rep):
        os.unlink(rep)
    p10, new1, said = run(tmp, [], fixes="tf32", report=rep, prog=NEWAPI, fake=FAKE29)
    if p10.returncode:
        print(p10.stderr)
    tf = "matmul=tf32 conv=tf32 rnn=tf32 cublas=True cudnn=True precision=high"
    steps = ("AT", "MATMUL", "CONV", "CUDNN", "GENERIC", "FLAGS", "GFLAGS", "LEGACY")
    check(p10.returncode == 0 and all(new1.get(k, "").startswith(tf) for k in steps),
          "fp32_precision: with the fix every CUDA op TF32 after each 'off', no mix of the APIs "
          "(%r)" % {k: new1.get(k) for k in steps})
    check(new1.get("MATMUL", "").endswith(" tf32") and new1.get("CONV", "").endswith(
          " tf32 tf32") and new1.get("CUDNN", "").endswith(" tf32") and
          new1.get("GENERIC", "").endswith("mkldnn_conv=ieee ieee"),
          "fp32_precision: the ops' and cuDNN's 'ieee' / 'none' made 'tf32'; the generic 'ieee' "
          "kept for the CPU (%r)" % new1)
    check(new1.get("MKLDNN") == "ieee" and new1.get("BF16", "").startswith("refused"),
          "fp32_precision: mkldnn's settings and an invalid value left alone (%r, %r)"
          % (new1.get("MKLDNN"), new1.get("BF16")))
    check(len([s for s in said if "fp32_precision 'tf32' for cuda.matmul" in s]) == 1 and
          len([s for s in said if "ignored (torch.backends.cuda.matmul.fp32_precision = "
               "'ieee')" in s]) == 1 and
          len([s for s in said if "ignored (torch.backends.cuda.matmul.allow_tf32 = False)"
               in s]) == 1, "fp32_precision: applied, and each API's first override said once "
          "(%r)" % said)
    t = load(rep).get("fixes", {}).get("tf32", {})
    check(t.get("applied") is True and t.get("api") == "fp32_precision" and
          t.get("overrides_fp32_precision") == 8 and t.get("overrides_allow_tf32") == 2 and
          t.get("overrides") == 10, "fp32_precision: the report says the API and the overrides "
          "through each (%r)" % t)

    # a report that cannot be written: said, the program's exit status unchanged
    p8, _, said = run(tmp, ["plain"], fixes="tf32",
                      report=os.path.join(tmp, "no", "such", "dir", "r.json"))
    check(p8.returncode == 0 and len([s for s in said if "report" in s]) == 1,
          "an unwritable report: said once, exit status 0 (%r)" % said)

    # foreach's choice of fused=True: only when every parameter is a floating-point CUDA
    # tensor (stand-ins here: a CPU torch has none); the iterables are made lists, not consumed
    probe = r'''
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("apx_site_probe", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
class T:
    def __init__(s, cuda, fl): s.is_cuda, s.fl = cuda, fl
    def is_floating_point(s): return s.fl
f = m._Tune.cuda_float_params
a = {"params": (t for t in [T(True, True), T(True, True)])}
b = {"params": [T(True, True), T(False, True)]}
c = {"params": [{"params": (t for t in [T(True, True)])}, {"params": [T(True, False)]}]}
d = {"params": [{"params": iter([T(True, True)])}]}
print(json.dumps([f(a), len(a["params"]), f(b), f(c), f(d), type(d["params"][0]["params"]).__name__,
                  f({"params": []}), f({})]))
'''
    r = subprocess.run([PY, "-c", probe, SITE], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if not k.startswith("APX_")})
    try:
        got = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        got = r.stdout + r.stderr
    check(got == [True, 2, False, False, True, "list", False, False],
          "foreach: fused=True only for floating-point CUDA parameters, groups and generators "
          "made lists (%r)" % (got,))

    # --steps (APX_TUNE_STEPS): the program ends cleanly after its N-th optimizer step, its
    # atexit handlers run (the collector closes the trace there), said once; without it, all
    steps_prog = r'''
import atexit
import sys
import torch
atexit.register(lambda: print("ATEXIT ran", flush=True))
m = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(50):
    m(torch.randn(2, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
    print("STEP", i, flush=True)
print("END done")
'''
    p, out, said = run(tmp, [], prog=steps_prog, env={"APX_TUNE_STEPS": "5"})
    steps = [ln for ln in p.stdout.splitlines() if ln.startswith("STEP")]
    check(p.returncode == 0 and len(steps) == 4 and "END" not in out and "ATEXIT" in out,
          "--steps 5: the program ends at its 5th optimizer step, exit 0, atexit ran (rc %d, "
          "%d steps printed)" % (p.returncode, len(steps)))
    check(said == ["[apx] tune: --steps: 5 optimizer steps done; the program ends here"],
          "--steps: said once (%r)" % said)
    p, out, said = run(tmp, [], prog=steps_prog)
    check(p.returncode == 0 and out.get("END") == "done" and not said,
          "without APX_TUNE_STEPS: all 50 steps, nothing said")

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
