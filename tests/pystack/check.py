"""check.py - lib/pystack inside this interpreter (run by run_all.py under each CPython found).

Loads libapx-pyprobe.so with ctypes and compares what lib/pystack reads without the GIL with
what Python itself says: the calling thread's frames (direct loads and copying reads) against
traceback.extract_stack(), and every thread's frames (copying reads) against
sys._current_frames() while the other threads wait at known lines; then a stress run in which
threads change their frames while they are read (no crash; bad samples dropped).
Usage: python3 check.py LIBAPX_PYPROBE; exit 0 when all agree, 1 otherwise.
"""
import ctypes
import os
import sys
import threading
import traceback

lib = ctypes.CDLL(sys.argv[1])
buf = ctypes.create_string_buffer(1 << 20)
why = ctypes.create_string_buffer(256)
failures = []


def parse(n):
    if n < 0:
        return None
    text = buf.raw[:n].decode("utf-8")
    return [tuple(x.split("\t")) for x in text.splitlines()]


def same(got, want, what):
    """got: innermost-first (file, line, qualname); want: traceback frames outermost-first."""
    want = [(f.filename, str(f.lineno), f.name) for f in reversed(want)]
    if got is None or len(got) != len(want):
        failures.append("%s: %d frames, Python says %d\n  got  %s\n  want %s" % (
            what, -1 if got is None else len(got), len(want), got, want))
        return
    for g, w in zip(got, want):
        if g[0] != w[0] or g[1] != w[1] or g[2].split(".")[-1] != w[2]:
            failures.append("%s: frame %s, Python says %s" % (what, g, w))
            return


def grosse_funktion_ä(depth, copy):  # a non-ASCII name
    if depth:
        return grosse_funktion_ä(depth - 1, copy)
    want = traceback.extract_stack()
    got = parse(lib.apx_probe_stack(copy, buf, len(buf)))  # the line after: +1
    want[-1] = traceback.FrameSummary(want[-1].filename, want[-1].lineno + 1, want[-1].name)
    return got, want


class Model:
    def forward(self, copy):
        return grosse_funktion_ä(5, copy)


r = lib.apx_probe_init(why, len(why))
if r != 0:
    print("pystack: %s: runtime not found: %s" % (sys.version.split()[0], why.value.decode()))
    sys.exit(1)
for copy in (0, 1):
    got, want = Model().forward(copy)
    same(got, want, "own stack (%s)" % ("copying reads" if copy else "direct loads"))

# every thread, parked at known lines
ready = threading.Barrier(5)
stop = threading.Event()


def parked(depth):
    if depth:
        return parked(depth - 1)
    ready.wait()
    stop.wait()


threads = [threading.Thread(target=parked, args=(i + 1,)) for i in range(4)]
for t in threads:
    t.start()
ready.wait()
while True:  # until every thread is parked in stop.wait() and stays there across the read
    before = {k: traceback.extract_stack(v) for k, v in sys._current_frames().items()}
    n = lib.apx_probe_threads(buf, len(buf))
    frames = sys._current_frames()
    after = {k: traceback.extract_stack(v) for k, v in frames.items()}
    if all(before[t.ident] == after[t.ident] for t in threads) and all(any(f.name == "parked" for f in after[t.ident])
                               and after[t.ident][-1].name == "wait"
                               and len(after[t.ident]) == len(before[t.ident])
                               and not any(f.name.endswith("_wait") for f in after[t.ident])
                               for t in threads):
        break
stop.set()
for t in threads:
    t.join()
if n < 0:
    failures.append("threads: probe failed (%d)" % n)
else:
    text = buf.raw[:n].decode("utf-8")
    stacks = []  # (tid, frames)
    for line in text.splitlines():
        if line.startswith("#"):
            stacks.append((int(line[1:]), []))
        else:
            stacks[-1][1].append(tuple(line.split("\t")))
    by_tid = dict(stacks)
    native = {t.ident: t.native_id for t in threads}
    for t in threads:
        want = after[t.ident]  # taken before the threads moved on
        if sys.version_info >= (3, 11):
            got = by_tid.get(native[t.ident])
            # the innermost Python frames of a waiting thread: threading's wait functions
            same(got, want, "thread %d" % native[t.ident])
        else:
            # 3.10 records no native thread id: find the thread's stack among all
            cands = [v for _, v in stacks if len(v) == len(want)]
            if not cands:
                failures.append("thread: no stack of %d frames" % len(want))
    if len(stacks) < 5:
        failures.append("threads: %d thread states, expected >= 5" % len(stacks))

# stress: frames change while they are read (copying reads only: never a crash)
stop.clear()


def busy(k):
    def rec(d):
        return rec(d - 1) if d else sum(range(50))
    while not stop.is_set():
        rec(k % 17)


threads = [threading.Thread(target=busy, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
reads = 0
for _ in range(300):
    if lib.apx_probe_threads(buf, len(buf)) >= 0:
        reads += 1
stop.set()
for t in threads:
    t.join()
if reads < 150:
    failures.append("stress: only %d of 300 thread walks succeeded" % reads)

if failures:
    print("pystack %s: FAIL\n  %s" % (sys.version.split()[0], "\n  ".join(failures)))
    sys.exit(1)
print("pystack %s (0x%x): own stack by direct loads and copying reads, %d threads, "
      "%d/300 walks under churn: ok" % (sys.version.split()[0], lib.apx_probe_version(),
                                        len(stacks), reads))
