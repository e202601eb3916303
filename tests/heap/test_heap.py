#!/usr/bin/env python3
# test_heap.py APX LIBHEAP STUB PROG OTHER [HARNESS] - host heap sampling without a GPU
# (libapx-heap.so, apx analyze --heap-sampling-bytes; docs/collector.md, "Host heap sampling").
# heap_prog runs with libapx-heap.so preloaded and libapx-heap-stub.so standing in for the
# collector (the same sink writes the trace), then apx report's heap section is held against
# what the program allocated:
#   - the estimated bytes of each site within 15 % of the truth, or 4 standard deviations of
#     the estimator when that is more (sd = sqrt((1 - p) / (n p)) for n blocks each sampled
#     with p = 1 - exp(-size / N)): at N = 64 KiB 64 MiB in 4 KiB blocks (~1000 samples, sd
#     3.1 %: 15 %) and 128 MiB from 8 threads at once; at N = 512 KiB the same 64 MiB has ~128
#     samples (sd 8.8 %: 35 %);
#   - live at the end: the two leaking sites, and nothing of the freed ones;
#   - the leak view after the pause: the phase-2 leak on top, the phase-1 leak not in it;
#   - fork() in the program works (the child allocates and exits 0), 8 threads allocate at once;
#   - a malloc preloaded before libapx-heap.so: said once, the program runs;
#   - python3 (with torch when it imports) runs unharmed, sampling on and off;
#   - large allocations (APX_HEAP_LARGE_BYTES=1 MiB, apx analyze's default): without sampling
#     exactly site_b's 32 blocks of 1 MiB and their 32 frees are recorded, and no heap section
#     is shown; with sampling, site_b counts exactly 32 MiB from 32 records;
#   - with HARNESS (the collector's heap source and Python stacks, tests/heap/heap_harness.c)
#     a Python function's line is the site of what it allocated.
# ctest heap-sampling.
import json
import math
import os
import subprocess
import sys
import tempfile

APX, LIBHEAP, STUB, PROG, OTHER = sys.argv[1:6]
HARNESS = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def env_with(preload, n, out=None, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APX_")}
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    if n:
        env["APX_HEAP_SAMPLING_BYTES"] = str(n)
    if out:
        env["APX_HEAP_STUB_OUT"] = out
    env.update(extra or {})
    return env


def report(trace, *args):
    r = subprocess.run([APX, "report", "--format", "json", "--section", "heap", "--top", "50",
                        *args, trace], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print(r.stderr)
        return None
    return json.loads(r.stdout)["heap"]


def by_func(sites):
    return {s.get("func"): s for s in sites}


def run_prog(tmp, n, name):
    out = os.path.join(tmp, name + ".apx")
    r = subprocess.run([PROG], env=env_with(LIBHEAP + ":" + STUB, n, out),
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{name}: heap_prog exits 0 (fork and 8 threads included): "
          f"{r.returncode} {r.stderr.strip()[:300]}")
    truth = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[0] == "site":
            truth[w[1]] = (int(w[2]), int(w[3]))
    info = subprocess.run([APX, "info", "--quiet", out], capture_output=True, text=True)
    check(info.returncode == 0, f"{name}: the trace is complete and valid ({info.stderr.strip()})")
    return out, truth


def rel_sd(total, block, n):
    """The estimator's relative standard deviation for total bytes in blocks (block 0:
    heap_prog's threads, sizes 64 << (i % 11) in turn)."""
    sizes = [64 << (i % 11) for i in range(11)] if block == 0 else [block]
    per_cycle = sum(sizes)
    cycles = total / per_cycle
    # Var(sum of s/p over sampled blocks) = sum s^2 (1-p)/p; relative to the total
    var = cycles * sum(s * s * (1 - p) / p for s in sizes
                       for p in [1 - math.exp(-s / n)])
    return math.sqrt(var) / total


def tolerance(total, block, n):
    return max(0.15, 4 * rel_sd(total, block, n))


def prog_checks(tmp):
    out, truth = run_prog(tmp, 65536, "n64k")
    heap = report(out, "--heap-leak", "0.5:")
    check(heap is not None, "apx report --section heap --heap-leak 0.5: works")
    if heap is None:
        return
    sites = by_func(heap["sites"])
    check(heap["interval_bytes"] == 65536, "the sampling interval is the one asked for")
    for name, (want, block) in sorted(truth.items()):
        got = sites.get(name, {}).get("bytes", 0)
        tol = tolerance(want, block, 65536)
        check(abs(got - want) <= tol * want,
              f"N=64 KiB: {name} allocated {got / 2**20:.1f} MiB, truth {want / 2**20:.1f} MiB "
              f"(within {100 * tol:.0f} %)")
    for name in ("site_leak", "site_early"):
        got = sites.get(name, {}).get("live_bytes", 0)
        want, block = truth[name]
        tol = tolerance(want, block, 65536)
        check(abs(got - want) <= tol * want,
              f"{name}: live at the end {got / 2**20:.1f} MiB of {want / 2**20:.1f} MiB "
              f"leaked (within {100 * tol:.0f} %)")
    for name in ("site_a", "site_b", "site_thread"):
        check(sites.get(name, {}).get("live_samples", 1) == 0, f"{name}: nothing live at the end")
    check(heap["sites"][0]["user"] and heap["sites"][0]["native"],
          "the sites are the program's own native functions")
    leak = heap.get("leak_sites", [])
    check(bool(leak) and leak[0].get("func") == "site_leak",
          f"leak view 0.5 s..end: site_leak on top ({[s.get('func') for s in leak][:3]})")
    check("site_early" not in by_func(leak), "leak view 0.5 s..end: the phase-1 leak is not in it")
    heap = report(out, "--heap-leak", ":")
    leak = by_func(heap.get("leak_sites", [])) if heap else {}
    check("site_early" in leak and "site_leak" in leak and "site_a" not in leak,
          "leak view of the whole run: both leaks, nothing freed")
    # the other formats carry the tables
    for fmt, want in (("csv", "heap"), ("html", "Host heap")):
        r = subprocess.run([APX, "report", "--format", fmt, "--section", "heap", "-o",
                            os.path.join(tmp, "r." + fmt), out], capture_output=True, text=True)
        body = open(os.path.join(tmp, "r." + fmt)).read() if r.returncode == 0 else ""
        check(r.returncode == 0 and want in body and "site_leak" in body,
              f"--format {fmt} has the heap table")
    r = subprocess.run([APX, "report", out], capture_output=True, text=True)
    check(r.returncode == 0 and "Host heap" in r.stdout and "site_leak" in r.stdout,
          "the full text report has the heap section")

    out, truth = run_prog(tmp, 524288, "n512k")
    heap = report(out)
    sites = by_func(heap["sites"]) if heap else {}
    for name in ("site_a", "site_thread"):
        got = sites.get(name, {}).get("bytes", 0)
        want, block = truth.get(name, (1, 1))
        tol = tolerance(want, block, 524288)
        check(abs(got - want) <= tol * want,
              f"N=512 KiB: {name} allocated {got / 2**20:.1f} MiB, truth {want / 2**20:.1f} MiB "
              f"(within {100 * tol:.0f} %)")


def large_checks(tmp):
    large = {"APX_HEAP_LARGE_BYTES": str(1 << 20)}
    out = os.path.join(tmp, "large.apx")
    r = subprocess.run([PROG], env=env_with(LIBHEAP + ":" + STUB, 0, out, large),
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"large allocations only: heap_prog exits 0 {r.stderr.strip()[:300]}")
    info = subprocess.run([APX, "info", out], capture_output=True, text=True)
    rows = [l.split() for l in info.stdout.splitlines() if l.split()[:1] == ["heap"]]
    check(rows and rows[0][2] == "64", f"... site_b's 32 blocks of 1 MiB and their 32 frees are "
          f"the trace's heap records, nothing smaller: {rows}")
    r = subprocess.run([APX, "report", "--format", "json", "--section", "heap", out],
                       capture_output=True, text=True, timeout=120)
    heap = json.loads(r.stdout).get("heap") if r.returncode == 0 else {"sites": ["?"]}
    check(not (heap or {}).get("sites") and not (heap or {}).get("samples"),
          f"... and the heap view has no sampled sites ({r.returncode})")
    r = subprocess.run([APX, "report", out], capture_output=True, text=True)
    check(r.returncode == 0 and "Host heap" not in r.stdout,
          "... and the text report no heap section")
    out = os.path.join(tmp, "large64k.apx")
    r = subprocess.run([PROG], env=env_with(LIBHEAP + ":" + STUB, 65536, out, large),
                       capture_output=True, text=True, timeout=120)
    heap = report(out)
    b = by_func(heap["sites"]).get("site_b", {}) if heap else {}
    check(r.returncode == 0 and b.get("bytes") == 32 << 20 and b.get("samples") == 32 and
          b.get("live_bytes") == 0,
          f"sampling at 64 KiB with large allocations: site_b is exactly 32 MiB in 32 records, "
          f"none live ({b.get('bytes')}, {b.get('samples')}, {b.get('live_bytes')})")


def other_allocator(tmp):
    out = os.path.join(tmp, "other.apx")
    r = subprocess.run([PROG], env=env_with(OTHER + ":" + LIBHEAP + ":" + STUB, 65536, out),
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "with another malloc preloaded first the program runs")
    said = [l for l in r.stderr.splitlines() if l.startswith("[apx] heap sampling off")]
    check(len(said) == 1, f"... and it is said once: {said}")


PY = r'''
import sys, threading
keep = []
def make_blobs(n):
    for i in range(n):
        keep.append(bytearray(100000))
def churn(n):
    for i in range(n):
        b = bytes(200000)
make_blobs(400)
churn(200)
ts = [threading.Thread(target=churn, args=(100,)) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
try:
    import torch
    x = torch.randn(256, 256)
    print("torch", float((x @ x).sum()) == float((x @ x).sum()))
except ImportError:
    print("torch missing")
print("done", len(keep))
'''


def python_checks(tmp):
    script = os.path.join(tmp, "prog.py")
    with open(script, "w") as f:
        f.write(PY)
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    for n, label in ((4096, "sampling every 4 KiB"), (0, "sampling off")):
        out = os.path.join(tmp, f"py{n}.apx")
        r = subprocess.run([py, script], env=env_with(LIBHEAP + ":" + STUB, n, out),
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0 and "done 400" in r.stdout and "torch False" not in r.stdout,
              f"python3 under libapx-heap.so ({label}) runs unharmed: {r.stdout.split()} "
              f"{r.stderr.strip()[-300:]}")
        if n:
            heap = report(out)
            check(heap is not None and heap["samples"] > 100,
                  f"... and its samples are in the trace ({heap and heap['samples']})")
    if not HARNESS:
        print("skip: no heap harness (no CUDA headers): Python stacks not checked")
        return
    drive = os.path.join(tmp, "drive.py")
    out = os.path.join(tmp, "pystacks.apx")
    with open(drive, "w") as f:
        f.write("import ctypes, sys\n"
                f"h = ctypes.CDLL({HARNESS!r})\n"
                "h.harness_start.argtypes = [ctypes.c_char_p]\n"
                f"assert h.harness_start({out!r}.encode()) == 0\n" + PY +
                "assert h.harness_stop() == 0\n")
    r = subprocess.run([py, drive], env=env_with(LIBHEAP, 65536),
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"the collector's heap source in python3: {r.stderr.strip()[-300:]}")
    heap = report(out)
    sites = heap["sites"] if heap else []
    lines = {s.get("func"): s for s in sites if not s["native"]}
    blobs, churn = lines.get("make_blobs", {}), lines.get("churn", {})
    check(blobs.get("line") == 6 + 4 and churn.get("line") == 9 + 4 and blobs.get("user"),
          f"the Python lines that allocated are sites: make_blobs:{blobs.get('line')}, "
          f"churn:{churn.get('line')} (want 10, 13)")
    want = 400 * 100000
    tol = tolerance(want, 100000, 65536)
    check(abs(blobs.get("bytes", 0) - want) <= tol * want and
          abs(blobs.get("live_bytes", 0) - want) <= tol * want,
          f"make_blobs: {blobs.get('bytes', 0) / 1e6:.1f} MB allocated and "
          f"{blobs.get('live_bytes', 0) / 1e6:.1f} MB live of 40.0 MB (within {100 * tol:.0f} %)")
    want = 600 * 200000
    tol = tolerance(want, 200000, 65536)
    check(abs(churn.get("bytes", 0) - want) <= tol * want and churn.get("live_samples", 1) == 0,
          f"churn: {churn.get('bytes', 0) / 1e6:.1f} MB of 120.0 MB from 5 threads, none live "
          f"(within {100 * tol:.0f} %)")


with tempfile.TemporaryDirectory(prefix="apx-heap-") as tmp:
    prog_checks(tmp)
    large_checks(tmp)
    other_allocator(tmp)
    python_checks(tmp)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all heap sampling checks passed")
