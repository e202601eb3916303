#!/usr/bin/env python3
# test_apx_site.py APX STUB SRCDIR - apx analyze's Python hooks (lib/collector/py/apx_site.py)
# run by this machine's python3 without a GPU or torch: the collector is stood in for by
# libapx-pyhook-stub.so (tests/pyhook/pyhook_stub.c: the same apx_py_* functions and ring,
# found through CUDA_INJECTION64_PATH as the real one is; it writes a trace at exit), and torch
# by a stub package (py/faketorch). Checks: traced functions, methods, static/class methods,
# nested classes and an async function return and raise as before and keep their names; the
# user's own sitecustomize still runs; the threshold is respected; a missing function is said
# once; ranges taken before the collector is loaded are handed over later; a forked child adds
# nothing; the memory sampler samples the used device only and stops at exit; apx report shows
# the ranges (NVTX section, named module:func) and the memory series; apx analyze makes and
# removes its folder. ctest pyhook-site.
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

APX, STUB, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
SITE = os.path.join(SRC, "lib", "collector", "py", "apx_site.py")
PY = os.path.join(SRC, "tests", "pyhook", "py")
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run_python(tmp, script, env_extra, preload=True, timeout=30):
    """Run script with the hooks' folder first on PYTHONPATH, as apx analyze sets it up."""
    site = os.path.join(tmp, "site")
    os.makedirs(site, exist_ok=True)
    shutil.copy(SITE, os.path.join(site, "sitecustomize.py"))
    path = os.path.join(tmp, "script.py")
    with open(path, "w") as f:
        f.write(script)
    out = os.path.join(tmp, "out.apx")
    if os.path.exists(out):
        os.unlink(out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("APX_")}
    env.update({"PYTHONPATH": ":".join([site, os.path.join(PY, "usersite"), PY]),
                "CUDA_INJECTION64_PATH": STUB, "APX_PYHOOK_STUB_OUT": out,
                "APX_PY_HOOKS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = STUB
    env.update(env_extra)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p, out, time.monotonic() - t0


def report(path, section):
    p = subprocess.run([APX, "report", "--format", "json", "--section", section, path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        return {}
    return json.loads(p.stdout)


def ranges(path):
    return {r["name"]: r for r in report(path, "nvtx").get("nvtx", [])}


M = "tracedpkg.sub.mod:"
ALL = ",".join(M + f for f in ("add", "boom", "Calc.mul", "Calc.smeth", "Calc.cmeth",
                                "Calc.Inner.deep", "coro", "slow", "fast", "nothere"))

TRACE_SCRIPT = r'''
import asyncio, json, os, sys
import tracedpkg.sub.mod as m
import tracedpkg.sub.mod as again   # a second import: no second hook, no second message
res = {}
res["add"] = [m.add(2, 3), m.add(1), m.add.__name__, m.add.__doc__, hasattr(m.add, "__wrapped__")]
try:
    m.boom("bad")
except ValueError as e:
    res["boom"] = str(e)
c = m.Calc(3)
res["methods"] = [c.mul(2), m.Calc.smeth(5), c.smeth(5), list(m.Calc.cmeth(1)), list(c.cmeth(2)),
                  m.Calc.Inner().deep(), m.Calc.mul.__qualname__]
res["coro"] = asyncio.run(m.coro(4))
for i in range(5):
    m.slow(); m.fast()
pid = os.fork()
if pid == 0:
    for i in range(50):
        m.add(0); m.slow()
    os._exit(0)
os.waitpid(pid, 0)
res["user_site"] = getattr(sys, "apx_test_user_sitecustomize", None)
res["sitecustomize"] = getattr(sys.modules.get("sitecustomize"), "__file__", "")
print(json.dumps(res))
'''


def test_trace(tmp):
    p, out, _ = run_python(tmp, TRACE_SCRIPT, {"APX_TRACE_FUNCTIONS": ALL,
                                               "APX_MEMORY_SAMPLING_HZ": "0"})
    check(p.returncode == 0, "traced script exits 0 (%s)" % p.stderr.strip()[-300:])
    if p.returncode:
        return
    res = json.loads(p.stdout.strip().splitlines()[-1])
    check(res["add"] == [5, 2, "add", "Adds.", True], "wrapped function: values, name, doc, "
          "__wrapped__ (%r)" % res["add"])
    check(res["boom"] == "bad", "wrapped function raises the same exception")
    check(res["methods"] == [6, 4, 4, ["Calc", 1], ["Calc", 2], "deep", "Calc.mul"],
          "method, staticmethod, classmethod, nested class (%r)" % res["methods"])
    check(res["coro"] == 8, "async function awaited through its wrapper")
    check(res["user_site"] == "ran" and "usersite" in res["sitecustomize"],
          "the user's own sitecustomize ran and is sys.modules['sitecustomize']")
    msg = "[apx] trace-functions: no function 'nothere' in module 'tracedpkg.sub.mod'"
    check(p.stderr.count(msg) == 1, "a missing function is said once (%r)" % p.stderr[-300:])
    r = ranges(out)
    want = {"add": 2, "boom": 1, "Calc.mul": 1, "Calc.smeth": 2, "Calc.cmeth": 2,
            "Calc.Inner.deep": 1, "coro": 1, "slow": 5, "fast": 5}
    got = {k[len(M):]: v["count"] for k, v in r.items() if k.startswith(M)}
    check(got == want, "report's NVTX ranges named module:func, counts as called, none "
          "from the forked child (%r)" % got)
    check(r.get(M + "slow", {}).get("wall_ns", 0) >= 5 * 3000000, "slow's wall time >= 5 x 3 ms")

    p, out, _ = run_python(tmp, TRACE_SCRIPT, {"APX_TRACE_FUNCTIONS": ALL,
                                               "APX_TRACE_FUNCTIONS_THRESHOLD_NS": "1000000",
                                               "APX_MEMORY_SAMPLING_HZ": "0"})
    got = {k[len(M):]: v["count"] for k, v in ranges(out).items()}
    check(p.returncode == 0 and got == {"slow": 5}, "threshold 1 ms: only slow's calls (%r)" % got)


BUFFER_SCRIPT = r'''
import ctypes, os, sys
import tracedpkg.sub.mod as m
for i in range(3):
    m.add(i)
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])   # as CUDA's initialisation loads it
import time; time.sleep(0.06)                      # past the hooks' 50 ms retry
for i in range(2):
    m.add(i)
print("done")
'''


def test_buffered(tmp):
    p, out, _ = run_python(tmp, BUFFER_SCRIPT, {"APX_TRACE_FUNCTIONS": M + "add",
                                                "APX_MEMORY_SAMPLING_HZ": "0"}, preload=False)
    check(p.returncode == 0, "buffered script exits 0 (%s)" % p.stderr.strip()[-300:])
    got = {k: v["count"] for k, v in ranges(out).items()}
    check(got == {M + "add": 5}, "ranges before the collector was loaded are handed over "
          "later (%r)" % got)


MEMORY_SCRIPT = r'''
import atexit, threading, time, sys
def after():   # registered first: runs after apx's handler
    alive = [t.name for t in threading.enumerate() if t.name == "apx-memory" and t.is_alive()]
    sys.stdout.write("sampler alive at exit: %s\n" % bool(alive))
atexit.register(after)
import torch
time.sleep(0.15)                       # CUDA not initialised yet: no sample
c = torch.cuda
c._initialized = True
c.allocated[0], c.reserved[0], c.peak[0] = 100 << 20, 200 << 20, 150 << 20
c.memory.pinned[0] = 4096
time.sleep(0.4)
c.allocated[0], c.reserved[0], c.peak[0] = 300 << 20, 400 << 20, 300 << 20
time.sleep(0.4)
c.allocated[0] = 50 << 20
time.sleep(0.2)
print("calls", c.calls[0])
'''


def test_memory(tmp):
    fake = os.path.join(PY, "faketorch")
    p, out, secs = run_python(tmp, MEMORY_SCRIPT, {"APX_MEMORY_SAMPLING_HZ": "50",
                                                   "PYTHONPATH": ":".join(
                                                       [os.path.join(tmp, "site"), fake])})
    check(p.returncode == 0, "memory script exits 0 (%s)" % p.stderr.strip()[-300:])
    check("sampler alive at exit: False" in p.stdout, "the sampler thread stopped at exit")
    check(secs < 10, "the process is not kept alive (%.1f s)" % secs)
    check(not p.stderr.strip(), "nothing said on stderr (%r)" % p.stderr[-300:])
    mem = report(out, "memory").get("memory", {})
    series = {(s["metric"], s["device"]): s for s in mem.get("over_time", [])}
    a = series.get(("torch.allocated_bytes", 0))
    check(a is not None and a["max_bytes"] == 300 << 20 and a["last_bytes"] == 50 << 20 and
          a["min_bytes"] == 50 << 20 and a["samples"] >= 20,
          "torch.allocated_bytes of device 0: min and last 50 MiB, max 300 MiB (%r)" % a)
    r = series.get(("torch.reserved_bytes", 0))
    check(r is not None and r["max_bytes"] == 400 << 20, "torch.reserved_bytes of device 0")
    pk = series.get(("torch.peak_allocated_bytes", 0))
    check(pk is not None and pk["max_bytes"] == 300 << 20, "torch.peak_allocated_bytes")
    check(not any(d == 1 for (_, d) in series if d is not None),
          "device 1 (never used) not sampled")
    host = {m for (m, d) in series if d is None}
    check({"process.rss_bytes", "process.rss_peak_bytes", "torch.pinned_host_bytes"} <= host,
          "process RSS, its peak and pinned host bytes sampled (%r)" % sorted(host))


def test_analyze(tmp):
    script = os.path.join(tmp, "chk.py")
    with open(script, "w") as f:
        f.write("import os, sys\n"
                "d = os.environ.get('PYTHONPATH', '').split(':')[0]\n"
                "print(d)\n"
                "print(os.path.exists(os.path.join(d, 'sitecustomize.py')), "
                "'apx_site' in sys.modules, getattr(sys, 'apx_test_user_sitecustomize', None))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("APX_")}
    env.update({"APX_CALIBRATE": "0", "PYTHONPATH": os.path.join(PY, "usersite"),
                "TMPDIR": tmp})
    p = subprocess.run([APX, "analyze", "-q", "-f", "-o", os.path.join(tmp, "a.apx"),
                        "--trace-functions", M + "add", script], env=env, capture_output=True,
                       text=True, timeout=60)
    if "collector libapx-inject.so was not found" in p.stderr:
        print("skip: apx analyze without the collector (no CUDA toolkit at build time)")
        return
    lines = p.stdout.strip().splitlines()
    check(p.returncode == 0 and len(lines) == 2, "apx analyze runs the script (%r)" % p.stderr)
    if len(lines) != 2:
        return
    check(lines[0].startswith(os.path.join(tmp, "apx-py-")) and lines[1] == "True True ran",
          "apx analyze puts its sitecustomize first on PYTHONPATH, chaining the user's (%r)"
          % lines)
    check(not os.path.exists(lines[0]), "apx analyze removed its folder after the run")
    env["PYTHONPATH"] = "/x"
    p = subprocess.run([APX, "analyze", "-q", "-f", "-o", os.path.join(tmp, "a.apx"),
                        "--memory-sampling", "0", script], env=env, capture_output=True,
                       text=True, timeout=60)
    check(p.stdout.startswith("/x\n"), "no hooks asked for: PYTHONPATH untouched")


def main():
    if not os.path.exists(STUB) or not hasattr(os, "RTLD_NOLOAD"):
        print("skip: no stub library or no RTLD_NOLOAD")
        return 77
    for test in (test_trace, test_buffered, test_memory, test_analyze):
        tmp = tempfile.mkdtemp(prefix="apx-pyhook-test-")
        try:
            test(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


sys.exit(main())
