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
#     can give backward kernels the forward line that created them.
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


# ---- start ---------------------------------------------------------------------------------------

def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _start():
    spec = os.environ.get("APX_TRACE_FUNCTIONS", "")
    hz = _env_int("APX_MEMORY_SAMPLING_HZ", 10)
    backward = _env_int("APX_PY_BACKWARD", 0) > 0
    if not spec and hz <= 0 and not backward:
        return None
    col = _Collector()
    state = _State()
    finder = _PostImportFinder()
    sys.meta_path.insert(0, finder)
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

sys.modules.setdefault("apx_site", sys.modules.get(__name__))
_chain_user_sitecustomize()
