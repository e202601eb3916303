"""sampler_check.py - the collector's Python-stack sources in a real python3, without CUDA
(ctest pystack-sampler): libapx-pysampler-harness.so starts them as the collector would,
"launches" record the calling line's stack, the 200 Hz sampler samples every thread while a
planted slow function burns CPU and 40 extra threads wait, and `apx report --format json`
of the written trace must name the lines: the launch line first among the hotspots by GPU
time, the slow function's line first by host time, >= 40 threads in the threads table, the
40 waiters' futex waits among the OS waits (>= 40 threads, listed as long waits), and context
switches for the threads sampled twice a second apart.
Usage: python3 sampler_check.py HARNESS.so APX; exit 0 when all hold."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
apx = sys.argv[2]
src = open(__file__, encoding="utf-8").read().splitlines()
LAUNCH_LINE = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# EXPECT: launch"))
HOST_LINE = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# EXPECT: host"))
lock = threading.Lock()
failures = []


def slow_tokenize(n):
    h = 0
    for i in range(n):
        h = (h * 31 + i) & 0xFFFFFFFF  # EXPECT: host
    return h


def step():
    with lock:
        lib.harness_launch(2000)  # EXPECT: launch
    slow_tokenize(60000)


stop = threading.Event()
waiters = [threading.Thread(target=stop.wait, daemon=True) for _ in range(40)]
out = os.path.join(tempfile.mkdtemp(prefix="apx-sampler-"), "harness.apx")
r = lib.harness_start(out.encode())
if r != 0:
    print("sampler_check: harness_start failed (%d)" % r)
    sys.exit(1)
for t in waiters:
    t.start()
t_end = time.monotonic() + 2.0
steps = 0
while time.monotonic() < t_end:
    step()
    steps += 1
    if steps % 5 == 0:
        with lock:
            lib.harness_drain()
stop.set()
for t in waiters:
    t.join()
with lock:
    lib.harness_drain()
    r = lib.harness_stop()
if r != 0:
    failures.append("writer close failed (%d)" % r)

rep = subprocess.run([apx, "report", "--format", "json", "--top", "100", out], capture_output=True, text=True)
if rep.returncode != 0:
    print("sampler_check: apx report failed: %s" % rep.stderr.strip())
    sys.exit(1)
doc = json.loads(rep.stdout)
hot = doc.get("hotspots") or []
me = os.path.abspath(__file__)
by_gpu = [h for h in hot if h.get("gpu_ns", 0) > 0]
if not by_gpu or (by_gpu[0].get("file"), by_gpu[0].get("line")) != (me, LAUNCH_LINE):
    failures.append("top GPU line: %s, expected %s:%d" % (
        by_gpu[0] if by_gpu else None, me, LAUNCH_LINE))
by_host = sorted(hot, key=lambda h: -h.get("host_ns", 0))
if not by_host or (by_host[0].get("file"), by_host[0].get("line")) != (me, HOST_LINE):
    failures.append("top host line: %s, expected %s:%d" % (
        by_host[0] if by_host else None, me, HOST_LINE))
threads = doc.get("threads") or []
if len(threads) < 41:
    failures.append("threads table: %d threads, expected >= 41" % len(threads))
futex = [w for w in doc.get("os_waits") or [] if w.get("syscall") == "futex"]
if not futex or futex[0].get("threads", 0) < 40 or futex[0].get("time_ns", 0) < 40 * 1e9:
    failures.append("os_waits: futex %s, expected >= 40 threads and >= 40 s" % futex)
if not any(w.get("syscall") == "futex" for w in doc.get("os_long_waits") or []):
    failures.append("os_long_waits: no futex wait of 10 ms or more")
if not any("voluntary_csw" in t for t in threads):
    failures.append("threads: no thread with context switches (voluntary_csw)")
kv = subprocess.run([apx, "info", out], capture_output=True, text=True).stdout
if failures:
    print("sampler_check: FAIL\n  " + "\n  ".join(failures))
    print(kv)
    sys.exit(1)
print("sampler_check: %d steps; top GPU line %s:%d (%d launches), top host line %s:%d "
      "(%.0f ms), %d threads sampled: ok" % (
          steps, os.path.basename(me), LAUNCH_LINE, by_gpu[0].get("launches", 0),
          os.path.basename(me), HOST_LINE, by_host[0].get("host_ns", 0) / 1e6, len(threads)))
