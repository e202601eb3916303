# apx_site.py - apx's Python hooks, applied from outside the user's code (docs/collector.md,
# "Python hooks"). `apx analyze` copies this file as sitecustomize.py into a private temp
# folder that it puts first on PYTHONPATH, and removes the folder after the run; Python's
# site.py imports it at start-up, in every Python process of the run. It then imports the
# user's own sitecustomize (the next one on sys.path), so their behaviour is unchanged.
#
# What it does, configured by environment variables apx analyze sets:
#   - APX_TRACE_FUNCTIONS ("module:func,module:Class.method" or "@file.json") and
#     APX_TRACE_FUNCTIONS_THRESHOLD_NS: wraps each named function when its module is imported
#     (a post-import hook on sys.meta_path, or at once if already imported) and hands every
#     call that took at least the threshold to the collector as a range (module:func, CLOCK_
#     MONOTONIC start and end, OS thread id);
#   - APX_MEMORY_SAMPLING_HZ (default 10, 0 = off): once torch is imported and CUDA is
#     initialised, a daemon thread samples torch's allocated / reserved / peak bytes per device,
#     pinned host bytes (when torch has host_memory_stats), the process's RSS and its peak;
#   - APX_PY_BACKWARD (1 = apx analyze --python-backward nvtx): PyTorch's emit_nvtx, entered on
#     the thread that initialises CUDA right after it does (class _Backward), so that the report
#     can give backward kernels the forward line that created them;
#   - APX_TUNE_STEPS (apx tune --steps N): the program ends after N optimizer steps (the one
#     exception raised into it on purpose: SystemExit(0) from the optimizer step);
#   - APX_TUNE_FIXES / APX_TUNE_REPORT (apx tune): fixes applied from outside the program when
#     torch is imported, and what they changed written at exit (class _Tune, below).
# Both reach libapx-inject.so (the path in CUDA_INJECTION64_PATH, loaded by the CUDA driver)
# through its exported apx_py_* functions (lib/collector/pyhook.h) with ctypes. Before CUDA
# is initialised the library is not loaded: up to BUFFER_MAX ranges wait here, later ones are
# counted and the count handed over. Nothing here may raise into the user's program: every
# failure turns one feature off and says so once on stderr ("[apx] ...").
#
# Threads: the wrappers run on the program's threads (the GIL guards this module's state); the
# sampler is a daemon thread of its own, stopped at exit (atexit), never started in a forked
# child.

import os
import sys


def _say(msg):
    try:
        sys.stderr.write("[apx] %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


# ---- the user's own sitecustomize -----------------------------------------------------------

def _chain_user_sitecustomize():
    """Import the next sitecustomize on sys.path (skipping this folder), as site.py would."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))
    path = []
    for p in sys.path:
        try:
            if os.path.realpath(p or os.getcwd()) == here:
                continue
        except Exception:
            pass
        path.append(p)
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as err:  # site.py's own words for a failing sitecustomize
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                             "%s: %s\n" % (err.__class__.__name__, err))


# ---- the collector, through ctypes -------------------------------------------------------------

BUFFER_MAX = 8192           # ranges kept before CUDA starts (half the collector's ring)
RETRY_NS = 50000000         # look for the collector at most every 50 ms


class _Collector:
    """The exported apx_py_* functions of libapx-inject.so, once it is loaded and started."""

    def __init__(self):
        import threading

        self.names = {}             # name -> index into self.order / self.ids
        self.order = []             # names by index
        self.ids = []               # the collector's id of each name, once connected
        self.lib = None             # set last, once everything above is ready
        self.dead = False           # no collector will come (no path, or ctypes failed)
        self.next_try = 0
        self.pending = []           # (index, domain index, start, end, tid) before connecting
        self.lost = 0
        self.lock = threading.Lock()
        self.path = os.environ.get("CUDA_INJECTION64_PATH", "")
        if not self.path:
            self.dead = True

    def index(self, name):
        with self.lock:
            i = self.names.get(name)
            if i is None:
                i = self.names[name] = len(self.order)
                self.order.append(name)
                r = self._register(self.lib, name) if self.lib is not None else 0
                self.ids.append(r if r > 0 else 0)
            return i

    @staticmethod
    def _register(lib, name):
        data = name.encode("utf-8", "replace")
        return lib.apx_py_name(data, len(data))

    def _open(self):
        import ctypes

        try:
            lib = ctypes.PyDLL(self.path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            return None             # not loaded yet: CUDA is not initialised
        try:
            lib.apx_py_name.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            lib.apx_py_name.restype = ctypes.c_int
            lib.apx_py_range.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64,
                                         ctypes.c_uint64, ctypes.c_uint64]
            lib.apx_py_range.restype = ctypes.c_int
            lib.apx_py_metric.argtypes = [ctypes.c_uint32, ctypes.c_int32, ctypes.c_double,
                                          ctypes.c_uint64]
            lib.apx_py_metric.restype = ctypes.c_int
            lib.apx_py_lost.argtypes = [ctypes.c_uint64]
            lib.apx_py_lost.restype = ctypes.c_int
        except AttributeError:
            self.dead = True
            _say("python hooks: '%s' has no apx_py_* functions (an older collector?); function "
                 "ranges and memory samples are not recorded" % self.path)
            return None
        return lib

    def connect(self, now):
        """True when the collector takes calls (looks at most every RETRY_NS)."""
        if self.lib is not None:
            return True
        if self.dead or now < self.next_try or not self.lock.acquire(blocking=False):
            return False
        try:
            self.next_try = now + RETRY_NS
            lib = self._open()
            if lib is None:
                return False
            ids = [self._register(lib, name) for name in self.order]
            if any(r == -11 for r in ids):      # -EAGAIN: loaded, not started yet
                return False
            self.ids = [r if r > 0 else 0 for r in ids]
            self.range_fn, self.metric_fn = lib.apx_py_range, lib.apx_py_metric
            for (i, d, t0, t1, tid) in self.pending:
                self.range_fn(self.ids[i], self.ids[d] if d >= 0 else 0, t0, t1, tid)
            self.pending = []
            if self.lost:
                lib.apx_py_lost(self.lost)
                self.lost = 0
            self.lib = lib
            return True
        except Exception as err:
            self.dead = True
            _say("python hooks: cannot reach the collector (%s); function ranges and memory "
                 "samples are not recorded" % err)
            return False
        finally:
            self.lock.release()

    def range(self, i, d, t0, t1, tid):
        try:
            if self.lib is not None:
                self.range_fn(self.ids[i], self.ids[d] if d >= 0 else 0, t0, t1, tid)
            elif self.connect(t1):
                self.range(i, d, t0, t1, tid)
            elif not self.dead:
                if len(self.pending) < BUFFER_MAX:
                    self.pending.append((i, d, t0, t1, tid))
                else:
                    self.lost += 1
        except Exception as err:
            self.dead, self.lib = True, None
            _say("python hooks: function ranges stopped (%s)" % err)

    def metric(self, i, device, value, ts):
        if self.lib is not None:
            self.metric_fn(self.ids[i], device, float(value), ts)

    def forget(self):
        """In a forked child: this process has no collector of its own."""
        self.dead, self.lib, self.pending = True, None, []


# ---- function tracing --------------------------------------------------------------------------

class _Target:
    __slots__ = ("module", "attr", "domain", "name", "done")

    def __init__(self, module, attr, domain):
        self.module, self.attr, self.domain = module, attr, domain
        self.name = "%s:%s" % (module, attr)
        self.done = False


def _parse_spec(spec):
    """Targets from "mod:func,mod:Class.method" or "@file.json"; errors said once, skipped."""
    targets = []
    if spec.startswith("@"):
        import json
        try:
            with open(spec[1:], encoding="utf-8") as f:
                doc = json.load(f)
        except Exception as err:
            _say("trace-functions: cannot read '%s': %s" % (spec[1:], err))
            return targets
        if isinstance(doc, dict):
            doc = [doc]
        if not isinstance(doc, list):
            _say("trace-functions: '%s' is not a list of {\"module\", \"function\"}" % spec[1:])
            return targets
        for entry in doc:
            if not isinstance(entry, dict) or not isinstance(entry.get("module"), str):
                _say("trace-functions: entry %r has no \"module\"; skipped" % (entry,))
                continue
            domain = entry.get("domain") if isinstance(entry.get("domain"), str) else None
            funcs = entry.get("functions", [])
            if isinstance(entry.get("function"), str):
                funcs = [entry["function"]] + list(funcs if isinstance(funcs, list) else [])
            for fn in funcs if isinstance(funcs, list) else []:
                if isinstance(fn, dict):
                    fn = fn.get("function")
                if isinstance(fn, str) and fn:
                    targets.append(_Target(entry["module"], fn, domain))
        return targets
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        mod, sep, attr = item.partition(":")
        if not sep or not mod or not attr:
            _say("trace-functions: '%s' is not module:function; skipped" % item)
            continue
        targets.append(_Target(mod, attr, None))
    return targets


def _make_wrapper(func, col, index, domain, threshold, state):
    import functools
    import inspect
    import threading
    import time

    mono = time.monotonic_ns
    tid = threading.get_native_id

    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def async_wrapper(*args, **kwargs):
            t0 = mono()
            try:
                return await func(*args, **kwargs)
            finally:
                t1 = mono()
                if t1 - t0 >= threshold and state.on:
                    col.range(index, domain, t0, t1, tid())
        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        t0 = mono()
        try:
            return func(*args, **kwargs)
        finally:
            t1 = mono()
            if t1 - t0 >= threshold and state.on:
                col.range(index, domain, t0, t1, tid())
    return wrapper


class _State:
    on = True       # False in a forked child


def _wrap_target(t, module, col, threshold, state):
    """Replace module's attribute path t.attr by a timing wrapper; False when not found."""
    parts = t.attr.split(".")
    owner = module
    for p in parts[:-1]:
        owner = getattr(owner, p, None)
        if owner is None:
            return False
    last = parts[-1]
    raw = None
    if isinstance(owner, type):
        for klass in owner.__mro__:         # staticmethod / classmethod objects as stored
            if last in klass.__dict__:
                raw = klass.__dict__[last]
                break
    else:
        raw = getattr(owner, last, None)
    if raw is None:
        return False
    index = col.index(t.name)
    domain = col.index(t.domain) if t.domain else -1
    if isinstance(raw, staticmethod):
        new = staticmethod(_make_wrapper(raw.__func__, col, index, domain, threshold, state))
    elif isinstance(raw, classmethod):
        new = classmethod(_make_wrapper(raw.__func__, col, index, domain, threshold, state))
    elif callable(raw) and not isinstance(raw, type):
        new = _make_wrapper(raw, col, index, domain, threshold, state)
    else:
        return False
    try:
        setattr(owner, last, new)
    except (AttributeError, TypeError):
        return False        # a built-in type's method: cannot be replaced
    return True


class _PostImportLoader:
    """Wraps a module's loader: runs the callback once the module has executed."""

    def __init__(self, loader, callback):
        self._loader, self._callback = loader, callback

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create else None

    def exec_module(self, module):
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._loader      # reload() and introspection see the real loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _PostImportFinder:
    """On sys.meta_path: notices the import of the watched modules (names -> callbacks)."""

    def __init__(self):
        self.watch = {}
        self.busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.watch or fullname in self.busy:
            return None
        self.busy.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.busy.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        callbacks = self.watch.pop(fullname)

        def done(module):
            for cb in callbacks:
                try:
                    cb(module)
                except Exception as err:
                    _say("python hooks: %s" % err)
        spec.loader = _PostImportLoader(spec.loader, done)
        return spec

    def when_imported(self, name, cb):
        mod = sys.modules.get(name)
        if mod is not None:
            cb(mod)
        else:
            self.watch.setdefault(name, []).append(cb)


def _trace_functions(spec, threshold, col, finder, state):
    targets = _parse_spec(spec)
    by_module = {}
    for t in targets:
        by_module.setdefault(t.module, []).append(t)

    def make_cb(ts):
        def cb(module):
            for t in ts:
                t.done = True
                if not _wrap_target(t, module, col, threshold, state):
                    _say("trace-functions: no function '%s' in module '%s'" % (t.attr, t.module))
        return cb

    for name, ts in by_module.items():
        finder.when_imported(name, make_cb(ts))
    return targets


# ---- memory over time ----------------------------------------------------------------------------

_METRICS = ("torch.allocated_bytes", "torch.reserved_bytes", "torch.peak_allocated_bytes",
            "torch.pinned_host_bytes", "process.rss_bytes", "process.rss_peak_bytes")


def _proc_rss():
    """(VmRSS, VmHWM) in bytes from /proc/self/status; None for one it does not give."""
    rss = hwm = None
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith(b"VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return rss, hwm


class _MemorySampler:
    """A daemon thread: every period, torch's counters per used device and the process's RSS."""

    def __init__(self, torch, col, hz):
        import threading
        import time

        self.torch, self.col, self.period = torch, col, 1.0 / hz
        self.mono = time.monotonic_ns
        self.stop_event = threading.Event()
        self.ids = [col.index(n) for n in _METRICS]
        self.used = set()
        self.pinned = True
        self.thread = threading.Thread(target=self.run, name="apx-memory", daemon=True)

    def start(self):
        import atexit
        self.thread.start()
        atexit.register(self.stop)

    def stop(self):
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(1.0)

    def sample(self):
        cuda = self.torch.cuda
        if not cuda.is_initialized():
            return
        now = self.mono()
        if not self.col.connect(now):
            return
        ids, metric = self.ids, self.col.metric
        for d in range(cuda.device_count()):
            reserved = cuda.memory_reserved(d)
            peak = cuda.max_memory_allocated(d)
            if d not in self.used:
                if not reserved and not peak:
                    continue        # a device the program has not used
                self.used.add(d)
            metric(ids[0], d, cuda.memory_allocated(d), now)
            metric(ids[1], d, reserved, now)
            metric(ids[2], d, peak, now)
        if self.pinned:
            stats_fn = getattr(getattr(cuda, "memory", None), "host_memory_stats", None)
            if stats_fn is None:
                self.pinned = False
            else:
                try:
                    stats = stats_fn()
                    v = stats.get("allocated_bytes.current",
                                  stats.get("allocated_bytes.all.current"))
                    if v is not None:
                        metric(ids[3], -1, v, now)
                except Exception:
                    self.pinned = False
        rss, hwm = _proc_rss()
        if rss is not None:
            metric(ids[4], -1, rss, now)
        if hwm is not None:
            metric(ids[5], -1, hwm, now)

    def run(self):
        failures = 0
        while not self.stop_event.wait(self.period):
            try:
                self.sample()
                failures = 0
            except Exception as err:
                failures += 1
                if failures == 3:
                    _say("memory-sampling: stopped after 3 failed samples (%s: %s)"
                         % (err.__class__.__name__, err))
                    return


# ---- backward kernels' forward lines (--python-backward nvtx) -----------------------------------

class _Backward:
    """PyTorch's emit_nvtx, on from the moment CUDA is initialised: every op an NVTX range whose
    name carries its autograd sequence number, which the report joins to give backward kernels
    the forward line that created them (docs/collector.md, "Backward kernels").

    Not at import: an NVTX call before CUDA starts would find no libcupti loaded, and NVTX's
    injection would turn NVTX off for the whole run (the user's own ranges too). So the hook
    wraps torch.cuda._lazy_init (which PyTorch calls, from Python and from C++, before the first
    CUDA work) and enters emit_nvtx on that thread right after it. emit_nvtx is thread-local;
    autograd's engine threads inherit it from the thread that calls backward(). PyTorch allows
    one profiler a thread: a torch.profiler / autograd.profiler.profile / emit_nvtx of the
    program's own stops ours first (said once)."""

    def __init__(self, torch, state):
        self.torch, self.state = torch, state
        self.ctx = None
        self.starting = False
        self.failed = False

    def start(self):
        if self.ctx is not None or self.failed or self.starting or not self.state.on:
            return
        self.starting = True
        try:
            ctx = self.torch.autograd.profiler.emit_nvtx(record_shapes=False)
            ctx.__enter__()
            self.ctx = ctx
        except Exception as err:
            self.failed = True
            _say("python-backward: PyTorch's emit_nvtx did not start (%s: %s); backward "
                 "kernels get no forward line" % (err.__class__.__name__, err))
        finally:
            self.starting = False

    def stop(self, why):
        ctx, self.ctx = self.ctx, None
        if ctx is None:
            return
        self.failed = True              # never again: the program's profiler owns the thread
        try:
            ctx.__exit__(None, None, None)
        except Exception:
            pass
        _say("python-backward: %s started; backward kernels get no forward line from here on"
             % why)

    def arm(self):
        import functools

        torch = self.torch
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not hasattr(cuda, "_lazy_init"):
            return
        me = self

        orig = cuda._lazy_init

        @functools.wraps(orig)
        def _lazy_init(*args, **kwargs):
            r = _lazy_init.__wrapped__(*args, **kwargs)
            if me.ctx is None and not me.failed and not me.starting:
                try:
                    ready = cuda.is_initialized()
                except Exception:
                    ready = False
                if ready:
                    me.start()
            return r
        cuda._lazy_init = _lazy_init

        # the program's own profilers: only one a thread
        prof = getattr(getattr(torch, "autograd", None), "profiler", None)
        for klass, meth, what in ((getattr(prof, "profile", None), "_prepare_trace",
                                   "torch.profiler"),
                                  (getattr(prof, "profile", None), "__enter__",
                                   "torch.autograd.profiler.profile"),
                                  (getattr(prof, "emit_nvtx", None), "__enter__",
                                   "the program's emit_nvtx")):
            fn = getattr(klass, meth, None) if klass is not None else None
            if fn is None:
                continue

            def make(fn, what):
                @functools.wraps(fn)
                def wrapper(*args, **kwargs):
                    if not me.starting and me.ctx is not None:
                        me.stop(what)
                    return fn(*args, **kwargs)
                return wrapper
            try:
                setattr(klass, meth, make(fn, what))
            except (AttributeError, TypeError):
                pass
        if cuda.is_initialized():
            self.start()


# ---- apx tune: fixes applied from outside the program (APX_TUNE_FIXES) ----------------------------
#
# `apx tune` (cli/cmd_tune.c) runs the program several times under apx analyze, with and without
# fixes, to measure what each one saves. APX_TUNE_FIXES names the fixes of one run (comma-
# separated, TUNE_FIXES; unknown names said once and ignored; unset or empty: nothing here runs).
# They are applied when torch is imported (the post-import hook), by wrapping torch's own
# functions: never by editing the program, never raising into it (a fix that cannot be applied is
# said once and the run goes on without it). Each fix says once on stderr what it did
# ("[apx] tune: ..."). APX_TUNE_REPORT=<path>: at exit, each process adds its counts to the JSON
# there ({"fixes": {name: {"applied", "count", ..., "note"}}, "unknown", "processes"}; merged
# under a lock on the folder, written to a temp file and renamed), so that apx tune can tell a fix
# that took effect from one that found nothing to change. apx tune removes the file before a run.

TUNE_FIXES = ("tf32", "pin_memory", "workers", "foreach", "set_to_none", "no_empty_cache")
TUNE_OPTIMIZERS = ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam",
                   "ASGD", "Adadelta")
TUNE_FUSED_CUDA = ("Adam", "AdamW", "SGD")    # optimizers whose fused=True runs on CUDA
TUNE_NOT_APPLIED = {
    "tf32": "torch was not imported",
    "pin_memory": "no DataLoader with pin_memory=False was created and no pinned tensor was "
                  "copied to the GPU",
    "workers": "no DataLoader with num_workers=0 was created",
    "foreach": "no optimizer (%s) was created with foreach=False" % ", ".join(TUNE_OPTIMIZERS),
    "set_to_none": "zero_grad was not called with set_to_none=False",
    "no_empty_cache": "torch.cuda.empty_cache() was not called",
}


def _tune_workers():
    return min(4, max(1, (os.cpu_count() or 2) // 2))


class _Tune:
    """The fixes of one run, their counts (this process's) and the report."""

    def __init__(self, fixes, report):
        self.counts = {f: {"count": 0} for f in fixes}     # fix -> counters; "count": applied
        self.notes = {}             # fix -> why it was not applied (overrides TUNE_NOT_APPLIED)
        self.unknown = []
        self.report = report
        self.said = set()
        self.torch_seen = False
        self.cuda_ok = None         # torch.cuda.is_available(), asked at the first DataLoader
        self.forked = False

    def say_once(self, key, msg):
        if key not in self.said:
            self.said.add(key)
            _say("tune: " + msg)

    def count(self, fix, what="count", n=1):
        c = self.counts[fix]
        c[what] = c.get(what, 0) + n

    def fail(self, fix, err):
        self.notes[fix] = "not applied: %s: %s" % (err.__class__.__name__, err)
        self.say_once("fail-" + fix, "%s: %s" % (fix, self.notes[fix]))

    # -- at `import torch` --

    def torch_imported(self, torch):
        self.torch_seen = True
        for fix, apply in (("tf32", self.fix_tf32), ("foreach", self.fix_foreach),
                           ("set_to_none", self.fix_set_to_none),
                           ("no_empty_cache", self.fix_no_empty_cache)):
            if fix in self.counts:
                try:
                    apply(torch)
                except Exception as err:
                    self.fail(fix, err)
        if "pin_memory" in self.counts or "workers" in self.counts:
            try:
                self.wrap_dataloader(torch)
            except Exception as err:
                for fix in ("pin_memory", "workers"):
                    if fix in self.counts:
                        self.fail(fix, err)
        if "pin_memory" in self.counts:
            version = getattr(torch, "version", None)
            if getattr(version, "cuda", None) or getattr(version, "hip", None):
                try:
                    self.wrap_tensor_copies(torch)
                except Exception as err:
                    self.fail("pin_memory", err)

    def override(self, what, api="allow_tf32"):
        """One 'off' of the program's ignored; api: the API it came through, "allow_tf32" (the
        flags, cudnn.flags, set_float32_matmul_precision) or "fp32_precision" (torch 2.9+)."""
        self.count("tf32", "overrides")
        self.count("tf32", "overrides_" + api)
        self.say_once("tf32-override-" + api, "tf32: the program's own 'off' ignored (%s); TF32 "
                      "stays on" % what)

    def fix_tf32(self, torch):
        """TF32 on through both of torch's APIs: the allow_tf32 flags and
        set_float32_matmul_precision, and, where torch has it (2.9+), fp32_precision: "ieee" /
        "tf32" / "none" (inherit) per (backend, op), looked up op -> backend's "all" -> generic
        (torch.backends.fp32_precision). The legacy setters write the new settings too, and
        torch raises when the two disagree ("a mix of the legacy and new APIs"): so every
        override keeps them agreeing, both on. The CUDA ops' own settings (cuda.matmul,
        cudnn.conv, cudnn.rnn) are set to "tf32", which no parent's value can change; a
        program's "ieee" for cuDNN as a whole becomes "tf32", its generic "ieee" is kept (CPU
        backends read it too) and counted, since CUDA's ops no longer follow it."""
        import functools
        import inspect

        def attr(obj, name):        # torch 1.x's cuBLASModule raises AssertionError
            try:
                return getattr(obj, name)
            except Exception:
                return None

        backends = torch.backends
        matmul = backends.cuda.matmul
        cudnn = backends.cudnn
        conv, rnn = attr(cudnn, "conv"), attr(cudnn, "rnn")
        new_api = isinstance(attr(matmul, "fp32_precision"), str)
        matmul.allow_tf32 = True
        cudnn.allow_tf32 = True
        set_prec = getattr(torch, "set_float32_matmul_precision", None)
        if set_prec is not None:
            set_prec("high")
        if new_api:
            matmul.fp32_precision = "tf32"
            for op in (conv, rnn):
                if isinstance(attr(op, "fp32_precision"), str):
                    op.fp32_precision = "tf32"
        self.counts["tf32"]["api"] = "fp32_precision" if new_api else "allow_tf32"
        self.count("tf32")
        self.say_once("tf32", "tf32: TF32 on for matmul and cuDNN (allow_tf32 = True for both, "
                      "float32 matmul precision 'high'%s); the program's own 'off' will be "
                      "ignored" % (", fp32_precision 'tf32' for cuda.matmul, cudnn.conv and "
                                   "cudnn.rnn" if new_api else ""))
        me = self

        def wrap_setattr(klass, label, parent=False):
            """klass.__setattr__: allow_tf32 False -> True; fp32_precision "ieee" (an op's
            own, or a parent's) or "none" (an op's own: inherit) -> "tf32"."""
            orig = klass.__setattr__

            def __setattr__(obj, name, value):
                if name == "allow_tf32" and value is not None and not value:
                    me.override("%s.allow_tf32 = %r" % (label, value))
                    value = True
                elif name == "fp32_precision" and (value == "ieee" or
                                                   (value == "none" and not parent)):
                    me.override("%s.fp32_precision = %r" % (label, value), "fp32_precision")
                    value = "tf32"
                return orig(obj, name, value)
            klass.__setattr__ = __setattr__

        def wrap_op_setattr(klass):
            """torch.backends' _FP32Precision (cudnn.conv, cudnn.rnn; mkldnn's too, which are
            left alone): fp32_precision "ieee" / "none" of a CUDA op -> "tf32"."""
            orig = klass.__setattr__

            def __setattr__(obj, name, value):
                if (name == "fp32_precision" and value in ("ieee", "none") and
                        getattr(obj, "backend", None) == "cuda"):
                    op = getattr(obj, "op", "?")
                    me.override("torch.backends.%s.%s.fp32_precision = %r"
                                % ("cuda" if op == "matmul" else "cudnn", op, value),
                                "fp32_precision")
                    value = "tf32"
                return orig(obj, name, value)
            klass.__setattr__ = __setattr__

        def wrap_generic(klass):
            """torch.backends.fp32_precision = "ieee": kept (the CPU's backends read it),
            counted: CUDA's ops keep their own "tf32"."""
            orig = klass.__setattr__

            def __setattr__(obj, name, value):
                if name == "fp32_precision" and value == "ieee":
                    me.override("torch.backends.fp32_precision = 'ieee', kept for the CPU; "
                                "CUDA's matmul, conv and rnn keep 'tf32'", "fp32_precision")
                return orig(obj, name, value)
            klass.__setattr__ = __setattr__

        def guard(what, fn, *args):
            try:
                fn(*args)
            except Exception as err:        # TF32 is on; only that override is missing
                me.say_once("tf32-" + what, "tf32: the program's own %s cannot be overridden "
                            "(%s: %s)" % (what, err.__class__.__name__, err))

        ops = {type(op) for op in (conv, rnn) if op is not None} if new_api else set()
        if type(matmul) not in ops:             # cuBLASModule (an _FP32Precision: below)
            guard("torch.backends.cuda.matmul.allow_tf32", wrap_setattr, type(matmul),
                  "torch.backends.cuda.matmul")
        else:
            ops.add(type(matmul))
        if type(cudnn) is not type(sys):        # a PropModule subclass (a module cannot be)
            guard("torch.backends.cudnn.allow_tf32", wrap_setattr, type(cudnn),
                  "torch.backends.cudnn", True)
        for klass in ops:
            if klass is not type(sys):
                guard("torch.backends.cudnn.conv/rnn.fp32_precision", wrap_op_setattr, klass)
        if new_api:
            if type(backends) is not type(sys) and \
                    isinstance(attr(backends, "fp32_precision"), str):
                guard("torch.backends.fp32_precision", wrap_generic, type(backends))

        def wrap_flags(module, label, args):
            """module.set_flags (what its flags(...) calls): args maps an argument to the API
            it belongs to and whether its value is changed (else only counted)."""
            real = module.__dict__.get("m", module)
            orig_flags = real.__dict__.get("set_flags") if hasattr(real, "__dict__") else None
            if orig_flags is None:
                return
            sig = inspect.signature(orig_flags)

            @functools.wraps(orig_flags)
            def set_flags(*a, **kw):
                try:
                    bound = sig.bind(*a, **kw)
                    changed = False
                    for arg, (api, off, on) in args.items():
                        v = bound.arguments.get(arg)
                        if v is not None and off(v):
                            me.override("%s.set_flags(%s=%r)" % (label, arg, v), api)
                            if on is not None:
                                bound.arguments[arg] = on
                                changed = True
                    if changed:
                        a, kw = bound.args, bound.kwargs
                except Exception:
                    pass
                return orig_flags(*a, **kw)
            guard(label + ".set_flags", setattr, real, "set_flags", set_flags)

        # torch.backends.cudnn.flags(allow_tf32=False / fp32_precision="ieee") and set_flags
        # set them directly; torch.backends.flags(fp32_precision="ieee"): counted, kept
        wrap_flags(cudnn, "torch.backends.cudnn",
                   {"_allow_tf32": ("allow_tf32", lambda v: not v, True),
                    "_fp32_precision": ("fp32_precision", lambda v: v == "ieee", "tf32")})
        if new_api:
            wrap_flags(backends, "torch.backends",
                       {"_fp32_precision": ("fp32_precision", lambda v: v == "ieee", None)})
        if set_prec is not None:
            @functools.wraps(set_prec)
            def set_float32_matmul_precision(precision, *args, **kwargs):
                if precision == "highest":
                    me.override("torch.set_float32_matmul_precision('highest')")
                    precision = "high"
                return set_prec(precision, *args, **kwargs)
            torch.set_float32_matmul_precision = set_float32_matmul_precision

    def wrap_dataloader(self, torch):
        import functools
        import inspect
        import importlib

        data = importlib.import_module("torch.utils.data")
        klass = data.DataLoader
        orig = klass.__init__
        sig = inspect.signature(orig)
        me = self

        @functools.wraps(orig)
        def __init__(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                return orig(*args, **kwargs)        # the program's own error, unchanged
            try:
                if me.adjust_loader(torch, data, sig, bound.arguments):
                    args, kwargs = bound.args, bound.kwargs
            except Exception as err:
                me.say_once("loader-err", "DataLoader left unchanged (%s: %s)"
                            % (err.__class__.__name__, err))
            return orig(*args, **kwargs)
        klass.__init__ = __init__

    def adjust_loader(self, torch, data, sig, a):
        """Changes the bound arguments of one DataLoader(...) in place; True when it did."""
        def given(name):
            if name in a:
                return a[name]
            p = sig.parameters.get(name)
            return p.default if p is not None else None

        changed = False
        if "pin_memory" in self.counts and not given("pin_memory"):
            if self.cuda_ok is None:
                self.cuda_ok = bool(torch.cuda.is_available())  # as DataLoader's iterator asks
            if self.cuda_ok:
                a["pin_memory"] = True
                changed = True
                self.count("pin_memory")
                self.count("pin_memory", "loaders")
                self.say_once("pin", "pin_memory: DataLoader(pin_memory=False) made "
                              "pin_memory=True; copies of pinned tensors to the GPU made "
                              "non_blocking=True")
            else:
                why = "CUDA is not available (torch.cuda.is_available() is False)"
                self.notes["pin_memory"] = "not applied: " + why
                self.say_once("pin-nocuda", "pin_memory: not applied: " + why)
        if "workers" in self.counts and given("num_workers") == 0:
            import multiprocessing

            if isinstance(given("dataset"), data.IterableDataset):
                self.count("workers", "iterable_left")
                self.notes["workers"] = ("not applied: only DataLoaders of an IterableDataset "
                                         "were created with num_workers=0 (left alone: each "
                                         "worker would yield all of it)")
                self.say_once("workers-iter", "workers: a DataLoader of an IterableDataset left "
                              "with num_workers=0 (each worker would yield all of it)")
            elif multiprocessing.current_process().daemon:
                self.notes["workers"] = ("not applied: DataLoaders created in a daemonic "
                                         "process, which cannot start workers")
            else:
                n = _tune_workers()
                a["num_workers"] = n
                a["persistent_workers"] = True
                changed = True
                self.count("workers")
                self.say_once("workers", "workers: DataLoader(num_workers=0) made num_workers=%d, "
                              "persistent_workers=True" % n)
        return changed

    def wrap_tensor_copies(self, torch):
        """Tensor.to / Tensor.cuda of a pinned CPU tensor to a CUDA device: non_blocking=True.
        Only in a CUDA build; the checks are ordered so that is_pinned() is asked only for a
        copy to the GPU (which initialises CUDA anyway)."""
        import functools

        klass = torch.Tensor
        orig_to, orig_cuda = klass.to, klass.cuda
        Tensor, device = torch.Tensor, torch.device
        me = self

        def to_cuda(args, kwargs):
            d = kwargs["device"] if "device" in kwargs else (args[0] if args else None)
            if isinstance(d, Tensor):
                d = d.device
            if isinstance(d, str):
                return d.startswith("cuda")
            if isinstance(d, device):
                return d.type == "cuda"
            return type(d) is int          # x.to(0): device 0

        def hit():
            me.count("pin_memory")
            me.count("pin_memory", "non_blocking")
            me.say_once("pin-nb", "pin_memory: a copy of a pinned tensor to the GPU made "
                        "non_blocking=True")

        @functools.wraps(orig_to)
        def to(self_, *args, **kwargs):
            if not kwargs.get("non_blocking") and not any(type(x) is bool for x in args):
                try:
                    ok = (to_cuda(args, kwargs) and self_.device.type == "cpu"
                          and self_.is_pinned())
                except Exception:
                    ok = False
                if ok:
                    kwargs["non_blocking"] = True
                    hit()
            return orig_to(self_, *args, **kwargs)

        @functools.wraps(orig_cuda)
        def cuda(self_, *args, **kwargs):
            if len(args) < 2 and not kwargs.get("non_blocking"):
                try:
                    ok = self_.device.type == "cpu" and self_.is_pinned()
                except Exception:
                    ok = False
                if ok:
                    kwargs["non_blocking"] = True
                    hit()
            return orig_cuda(self_, *args, **kwargs)
        klass.to, klass.cuda = to, cuda

    def wrap_args(self, klass, meth, param, change):
        """klass.meth wrapped: change(bound arguments, default of param) edits them."""
        import functools
        import inspect

        orig = klass.__dict__.get(meth)
        if orig is None:
            return False
        sig = inspect.signature(orig)
        if param not in sig.parameters:
            return False
        default = sig.parameters[param].default

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
                if change(bound.arguments, default):
                    args, kwargs = bound.args, bound.kwargs
            except Exception:
                pass                        # bad arguments: the program's own error, unchanged
            return orig(*args, **kwargs)
        setattr(klass, meth, wrapper)
        return True

    @staticmethod
    def cuda_float_params(a):
        """True when every parameter in bound arguments a (params: tensors, or groups of them)
        is a floating-point CUDA tensor, what fused=True needs; the iterables are made lists
        (torch makes them lists too), so that checking them consumes nothing."""
        params = a.get("params")
        if params is None:
            return False
        params = a["params"] = list(params)
        tensors = []
        for p in params:
            if isinstance(p, dict):
                p["params"] = list(p.get("params", ()))
                tensors += p["params"]
            else:
                tensors.append(p)
        try:
            return bool(tensors) and all(t.is_cuda and t.is_floating_point() for t in tensors)
        except Exception:
            return False

    def fix_foreach(self, torch):
        import inspect
        me = self

        def make(name):
            try:                            # fused on CUDA: Adam, AdamW (2.0+), SGD (2.3+);
                fusable = name in TUNE_FUSED_CUDA and "fused" in inspect.signature(
                    getattr(torch.optim, name).__init__).parameters     # Adagrad's is CPU-only
            except (TypeError, ValueError):
                fusable = False

            def change(a, default):
                v = a.get("foreach", default)
                if v is None or v or a.get("differentiable") or a.get("fused"):
                    return False
                if fusable and me.cuda_float_params(a):
                    a["fused"] = True       # one kernel a chunk, what the rule's estimate is of
                    made = "fused=True"
                else:
                    a["foreach"] = True
                    made = "foreach=True"
                me.count("foreach")
                me.say_once("foreach", "foreach: torch.optim.%s(foreach=False) made %s "
                            "(later optimizers so made are counted)" % (name, made))
                return True
            return change

        wrapped = [n for n in TUNE_OPTIMIZERS if isinstance(getattr(torch.optim, n, None), type)
                   and self.wrap_args(getattr(torch.optim, n), "__init__", "foreach", make(n))]
        if not wrapped:
            self.notes["foreach"] = "not applied: no optimizer of this torch takes foreach"

    def fix_set_to_none(self, torch):
        me = self

        def make(label):
            def change(a, default):
                v = a.get("set_to_none", default)
                if v is None or v:
                    return False
                a["set_to_none"] = True
                me.count("set_to_none")
                me.say_once("set_to_none", "set_to_none: %s(set_to_none=False) made "
                            "set_to_none=True (gradients freed, not zeroed)" % label)
                return True
            return change

        done = [self.wrap_args(torch.optim.Optimizer, "zero_grad", "set_to_none",
                               make("Optimizer.zero_grad")),
                self.wrap_args(torch.nn.Module, "zero_grad", "set_to_none",
                               make("Module.zero_grad"))]
        if not any(done):
            self.notes["set_to_none"] = "not applied: zero_grad of this torch has no set_to_none"

    def fix_no_empty_cache(self, torch):
        import functools

        cuda = torch.cuda
        orig = cuda.empty_cache
        me = self

        @functools.wraps(orig)
        def empty_cache(*args, **kwargs):
            me.count("no_empty_cache")
            me.say_once("no_empty_cache", "no_empty_cache: torch.cuda.empty_cache() made a no-op "
                        "(the count is said at exit)")
        cuda.empty_cache = empty_cache
        memory = getattr(cuda, "memory", None)
        if memory is not None and getattr(memory, "empty_cache", None) is orig:
            memory.empty_cache = empty_cache

    # -- at exit --

    def doc(self):
        fixes = {}
        for fix, c in self.counts.items():
            entry = dict(c)
            entry["applied"] = c["count"] > 0
            if not entry["applied"]:
                entry["note"] = self.notes.get(fix) or (
                    TUNE_NOT_APPLIED[fix] if self.torch_seen else "torch was not imported")
            fixes[fix] = entry
        return {"fixes": fixes, "unknown": list(self.unknown), "processes": 1}

    @staticmethod
    def merge(old, new):
        """Counts of an earlier process of the run (old, as read back) plus this one's."""
        out = {"fixes": {}, "unknown": [], "processes": 1}
        if isinstance(old.get("processes"), int):
            out["processes"] = old["processes"] + new["processes"]
        for name in list(old.get("unknown") or []) + new["unknown"]:
            if isinstance(name, str) and name not in out["unknown"]:
                out["unknown"].append(name)
        ofixes = old["fixes"]
        for fix in list(ofixes) + [f for f in new["fixes"] if f not in ofixes]:
            a = ofixes.get(fix) if isinstance(ofixes.get(fix), dict) else {}
            b = new["fixes"].get(fix, {})
            e = {}
            for k in set(a) | set(b):
                va, vb = a.get(k), b.get(k)
                if k in ("applied", "note"):
                    continue
                if type(va) is int or type(vb) is int:
                    e[k] = (va if type(va) is int else 0) + (vb if type(vb) is int else 0)
                elif isinstance(vb, str) or isinstance(va, str):    # tf32's "api"
                    e[k] = vb if isinstance(vb, str) else va
            e["applied"] = bool(a.get("applied")) or bool(b.get("applied"))
            if not e["applied"]:
                e["note"] = b.get("note") or a.get("note") or ""
            out["fixes"][fix] = e
        return out

    def at_exit(self):
        if "no_empty_cache" in self.counts and self.torch_seen:
            n = self.counts["no_empty_cache"]["count"]
            if n or not self.forked:
                _say("tune: no_empty_cache: torch.cuda.empty_cache() skipped %d time%s"
                     % (n, "" if n == 1 else "s"))
        if self.report:
            try:
                self.write_report()
            except Exception as err:
                _say("tune: report '%s' not written (%s: %s)"
                     % (self.report, err.__class__.__name__, err))

    def write_report(self):
        import fcntl
        import json

        if self.forked and not any(c["count"] for c in self.counts.values()):
            return                  # a forked child that changed nothing: its parent reports
        doc = self.doc()
        path = os.path.abspath(self.report)
        lock = os.open(os.path.dirname(path), os.O_RDONLY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)       # every process of the run adds its counts
            try:
                with open(path, encoding="utf-8") as f:
                    old = json.load(f)
            except (OSError, ValueError):
                old = None
            if isinstance(old, dict) and isinstance(old.get("fixes"), dict):
                doc = self.merge(old, doc)
            tmp = "%s.tmp.%d" % (path, os.getpid())
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    json.dump(doc, f, indent=1, sort_keys=True)
                    f.write("\n")
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        finally:
            os.close(lock)          # releases the lock

    def in_child(self):
        """A forked child (DataLoader workers): its own counts from zero, its parent's said."""
        self.forked = True
        for c in self.counts.values():
            for k in c:
                if type(c[k]) is int:
                    c[k] = 0


def _tune_start():
    spec = os.environ.get("APX_TUNE_FIXES", "")
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        return None
    fixes = []
    unknown = []
    for n in names:
        if n in TUNE_FIXES:
            if n not in fixes:
                fixes.append(n)
        elif n not in unknown:
            unknown.append(n)
            _say("tune: unknown fix '%s' ignored (known: %s)" % (n, ", ".join(TUNE_FIXES)))
    tune = _Tune(fixes, os.environ.get("APX_TUNE_REPORT", ""))
    tune.unknown = unknown
    import atexit
    atexit.register(tune.at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=tune.in_child)
    if fixes:
        _get_finder().when_imported("torch", tune.torch_imported)
    return tune


def _tune_steps_start():
    """apx tune --steps N (APX_TUNE_STEPS): the program ends cleanly, SystemExit(0) raised
    from torch.optim's global step post-hook after its N-th optimizer step in this process
    (its atexit handlers run: the collector closes the trace). Worker processes forked later
    do not count."""
    n = _env_int("APX_TUNE_STEPS", 0)
    if n <= 0:
        return None
    state = {"steps": 0, "on": True}

    def after_step(opt, args, kwargs):
        if not state["on"]:
            return
        state["steps"] += 1
        if state["steps"] >= n:
            state["on"] = False
            _say("tune: --steps: %d optimizer steps done; the program ends here" % n)
            raise SystemExit(0)

    def torch_imported(torch):
        import torch.optim.optimizer as optim_module
        reg = getattr(optim_module, "register_optimizer_step_post_hook", None)
        if reg is not None:         # torch 2.0+: a global hook after every optimizer's step
            reg(after_step)
            return
        init = torch.optim.Optimizer.__init__

        def init_counting(self, *args, **kwargs):    # older torch: each optimizer's own step
            init(self, *args, **kwargs)
            step = self.step

            def counted(*a, **k):
                r = step(*a, **k)
                after_step(self, a, k)
                return r
            self.step = counted
        torch.optim.Optimizer.__init__ = init_counting
    _get_finder().when_imported("torch", torch_imported)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: state.update(on=False))
    return state


# ---- start ---------------------------------------------------------------------------------------

def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


_finder = None       # the one _PostImportFinder on sys.meta_path, made by the first user


def _get_finder():
    global _finder
    if _finder is None:
        _finder = _PostImportFinder()
        sys.meta_path.insert(0, _finder)
    return _finder


def _start():
    spec = os.environ.get("APX_TRACE_FUNCTIONS", "")
    hz = _env_int("APX_MEMORY_SAMPLING_HZ", 10)
    backward = _env_int("APX_PY_BACKWARD", 0) > 0
    if not spec and hz <= 0 and not backward:
        return None
    col = _Collector()
    state = _State()
    finder = _get_finder()
    if spec:
        _trace_functions(spec, max(0, _env_int("APX_TRACE_FUNCTIONS_THRESHOLD_NS", 0)), col,
                         finder, state)
    if hz > 0:
        def torch_imported(torch):
            if state.on and hasattr(torch, "cuda"):
                _MemorySampler(torch, col, min(hz, 1000)).start()
        finder.when_imported("torch", torch_imported)
    if backward:
        def torch_backward(torch):
            if state.on:
                global _backward
                _backward = _Backward(torch, state)
                _backward.arm()
        finder.when_imported("torch", torch_backward)

    def in_child():
        state.on = False
        col.forget()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=in_child)
    return col


_backward = None     # the _Backward of --python-backward nvtx, once torch is imported

try:
    _apx = _start()
except Exception as _err:
    _say("python hooks: not started (%s: %s)" % (_err.__class__.__name__, _err))

_tune = None         # the _Tune of apx tune's APX_TUNE_FIXES

try:
    _tune = _tune_start()
except Exception as _err:
    _say("tune: fixes not applied (%s: %s)" % (_err.__class__.__name__, _err))

try:
    _tune_steps = _tune_steps_start()
except Exception as _err:
    _say("tune: --steps not applied (%s: %s)" % (_err.__class__.__name__, _err))

sys.modules.setdefault("apx_site", sys.modules.get(__name__))
_chain_user_sitecustomize()
