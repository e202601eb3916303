#!/usr/bin/env python3
"""kineto-import.py - `apx report trace.json` on the real Kineto traces of tests/fixtures/kineto
(ctest kineto-import): the kernel count and total kernel time, the copies, syncs and NVTX ranges
apx reports equal what the JSON says (computed here from the JSON with Python, independently of
apx), apx's own `apx export --format chrome` of the H200 traces reads back to the same
kernels, copies and top finding, the report names what the JSON lacks, and bad input (truncated, wrong types, huge numbers,
deep nesting, a FIFO, ...) exits 1 naming the file and the place.

usage: kineto-import.py APX SRCDIR
"""
import decimal
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

APX, SRC = sys.argv[1], sys.argv[2]
FIX = os.path.join(SRC, "tests", "fixtures", "kineto")
failed = []
SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
              "cudaThreadSynchronize", "cuStreamSynchronize", "cuCtxSynchronize",
              "cuEventSynchronize"}


def check(cond, what):
    if not cond:
        failed.append(what)
        print("FAIL:", what)


def ns(us):
    """Microseconds as Kineto writes them -> nanoseconds, exactly (3 decimals)."""
    return int((decimal.Decimal(repr(us)) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def expected(doc):
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    kern = [e for e in ev if e.get("cat") == "kernel"]
    copies = [e for e in ev if e.get("cat") == "gpu_memcpy"]
    syncs = [e for e in ev if e.get("cat") == "cuda_sync"
             and e["args"].get("cuda_sync_kind") != "Stream Wait Event"]
    if not [e for e in ev if e.get("cat") == "cuda_sync"]:  # then the API calls that wait
        syncs = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
                 and e["name"].split("_")[0] in SYNC_CALLS]
    marks = [e for e in ev if e.get("cat") == "user_annotation"]
    return {
        "kernels": len(kern),
        "kernel_ns": sum(ns(e["dur"]) for e in kern),
        "copies": len(copies),
        "copy_bytes": sum(e["args"].get("bytes", 0) for e in copies),
        "syncs": len(syncs),
        "markers": len(marks),
    }


def report(path, *opts):
    return subprocess.run([APX, "report", "--color", "never", *opts, path], capture_output=True,
                          text=True, timeout=60)


def got(rep):
    run = rep["run"]
    return {
        "kernels": run["kernels"],
        "kernel_ns": run["kernel_time_ns"],
        "copies": sum(t["count"] for t in rep["transfers"]),
        "copy_bytes": sum(t["bytes"] for t in rep["transfers"]),
        "syncs": sum(k["count"] for k in rep["synchronization"]["kinds"]
                     if k["kind"] != "stream-wait-event"),
        "markers": sum(n["count"] for n in rep["nvtx"]),
    }


tmp = tempfile.mkdtemp(prefix="apx-kineto-")
try:
    fixtures = sorted(glob.glob(os.path.join(FIX, "*.json.gz")))
    check(len(fixtures) >= 3, "at least 3 Kineto fixtures")
    # the same trace as plain .json, and under a name without .json (found by its content)
    first = os.path.join(FIX, "alexnet.json.gz")
    plain = os.path.join(tmp, "alexnet.json")
    with gzip.open(first, "rb") as f, open(plain, "wb") as o:
        o.write(f.read())
    shutil.copy(plain, os.path.join(tmp, "alexnet.trace"))
    for path in fixtures + [plain, os.path.join(tmp, "alexnet.trace")]:
        name = os.path.basename(path)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            want = expected(json.load(f))
        r = report(path, "--format", "json")
        check(r.returncode == 0, f"{name}: exit 0 (got {r.returncode}: {r.stderr.strip()})")
        if r.returncode:
            continue
        rep = json.loads(r.stdout)
        have = got(rep)
        for k in want:
            check(have[k] == want[k], f"{name}: {k} {have[k]} == {want[k]} from the JSON")
        degraded = rep["files"][0]["degraded"]
        for fact in ("host addresses of copies", "unified memory", "own cost per launch"):
            check(fact in degraded, f"{name}: the report says the JSON lacks {fact!r}")
        check(rep["files"][0]["producer"].startswith("torch.profiler"), f"{name}: producer")
        status = {c["rule"]: c["status"] for c in rep["checks"]}
        check(status["unified-memory"] == "not_measured", f"{name}: unified-memory not measured")
        print(f"ok: {name}: {have}")
    # the text report names the missing facts, and what a rule could not measure
    r = report(first)
    check(r.returncode == 0 and "not collected" in r.stdout and "Kineto JSON" in r.stdout,
          "text report: 'not collected ... Kineto JSON' in the summary")
    check("no host addresses of copies in the trace" in r.stdout,
          "text report: repeated-copy not measured without host addresses")
    r = subprocess.run([APX, "help", "report"], capture_output=True, text=True)
    check("Kineto" in r.stdout + r.stderr, "apx help report mentions Kineto JSON")

    # round trip: apx's own Kineto-shaped export of the H200 traces reads back to the same
    # kernels, copies and top finding as the .apx trace itself
    for ex in ("pageable_h2d", "launch_bound", "sync_every_step", "copies_serial"):
        src = os.path.join(SRC, "tests", "fixtures", "real", ex + ".apx")
        out = os.path.join(tmp, ex + ".json")
        r = subprocess.run([APX, "export", "--format", "chrome", "-o", out, src],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"{ex}: apx export --format chrome ({r.stderr.strip()})")
        a = report(src, "--format", "json", "--single")
        b = report(out, "--format", "json")
        check(a.returncode == 0 and b.returncode == 0, f"{ex}: both reports exit 0")
        if a.returncode or b.returncode:
            continue
        ra, rb = json.loads(a.stdout), json.loads(b.stdout)
        ga, gb = got(ra), got(rb)
        for k in ("kernels", "kernel_ns", "copies", "copy_bytes"):
            check(ga[k] == gb[k], f"{ex}: round trip {k}: {gb[k]} == {ga[k]} (.apx)")
        top = lambda rep: rep["findings"][0]["rule"] if rep["findings"] else None
        check(top(ra) == top(rb), f"{ex}: round trip top finding {top(rb)} == {top(ra)}")
        print(f"ok: {ex}: round trip {gb['kernels']} kernels, top finding {top(rb)}")

    # bad input: exit 1, the file named, the place named
    with open(plain, "rb") as f:
        text = f.read()
    with open(first, "rb") as f:
        gz = f.read()
    deep = b'{"traceEvents": [], "x": ' + b"[" * 100 + b"]" * 100 + b"}"
    bad = {
        "truncated.json": (text[: len(text) // 2], "truncated?)"),
        "truncated.json.gz": (gz[: len(gz) // 2], "gzip data cut short"),
        "wrong-type.json": (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "12"}]}',
                            "ts: a number (microseconds) expected, found a string"),
        "wrong-arg.json": (b'{"traceEvents": [{"ph": "X", "cat": "gpu_memcpy", "ts": 1,\n'
                           b' "args": {"bytes": [1]}}]}', "line 2, column 20"),
        "huge.json": (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1e300}]}',
                      "out of range"),
        "huge-int.json": (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1,'
                          b' "args": {"device": 123456789012345678901234}}]}', "out of range"),
        "long-number.json": (b'{"traceEvents": [{"ts": ' + b"1" * 100 + b"}]}",
                             "number longer than 64 characters"),
        "deep.json": (deep, "nested deeper than 64 levels"),
        "not-json.json": (b"PK\x03\x04 zip?", "unexpected character"),
        "empty.json": (b"", "the file ends inside"),
        "trailing.json": (b'{"traceEvents": []} {"more": 1}', "text after the end"),
        "control.json": (b'{"traceEvents": [{"name": "a\x01b"}]}', "control character"),
    }
    for name, (data, msg) in bad.items():
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        r = report(p)
        ok = r.returncode == 1 and p in r.stderr and msg in r.stderr and (
            "byte " in r.stderr or name.endswith(".gz"))
        check(ok, f"{name}: exit 1 naming the file and the place, '{msg}' "
                  f"(got {r.returncode}: {r.stderr.strip()})")
        if ok:
            print(f"ok: {name}: {r.stderr.strip()}")
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    try:
        r = report(fifo)
        check(r.returncode == 1 and "not a regular file (a FIFO)" in r.stderr and fifo in r.stderr,
              f"a FIFO: exit 1 without blocking (got {r.returncode}: {r.stderr.strip()})")
        print(f"ok: fifo.json: {r.stderr.strip()}")
    except subprocess.TimeoutExpired:
        check(False, "a FIFO: apx report blocked")
finally:
    shutil.rmtree(tmp)

if failed:
    print(f"kineto-import: {len(failed)} checks failed")
    sys.exit(1)
print("kineto-import: all checks passed")
