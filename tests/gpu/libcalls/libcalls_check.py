#!/usr/bin/env python3
# libcalls_check.py - library calls on the GPU: apx analyze's cuBLAS/cuDNN calls
# (libapx-watch.so's wrappers, --trace-libs) against what the program did (workload.py): at
# least one cuBLAS range per GEMM it asked for (2 Linear + 1 bmm a step) and one cuDNN range
# per convolution, on the program's main thread, each range holding the GPU work launched in
# it; then `--trace-libs none` records none. Prints which cuBLAS/cuDNN functions
# libtorch_cuda.so imports and which of them apx wraps (INFO). Exit 0 all PASS, 1 a FAIL,
# 77 without a GPU. Usage: libcalls_check.py APX OUT, or APX --from DIR: the same rows (but the
# --trace-libs none run) on DIR/libcalls.apx and .log kept from a GPU run, no GPU needed (ctest
# libcalls-fixture on tests/fixtures/libcalls/h100).
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPED = {"cublasGemmEx", "cublasGemmStridedBatchedEx", "cublasGemmBatchedEx", "cublasSgemm_v2",
           "cublasSgemmStridedBatched", "cublasSgemmEx", "cublasDgemm_v2",
           "cublasDgemmStridedBatched", "cublasLtMatmul", "cudnnBackendExecute",
           "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
           "cudnnConvolutionBackwardFilter"}
apx = sys.argv[1]
src = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--from" else None
out = src or (sys.argv[2] if len(sys.argv) > 2 else "libcalls-out")
dump = os.path.join(os.path.dirname(os.path.abspath(apx)), "apx-dump")
rows = []


def row(ok, what, detail):
    kind = {True: "PASS", False: "FAIL", None: "INFO"}[ok]
    rows.append(kind)
    print("%-4s %-46s %s" % (kind, what, detail), flush=True)


if not src:
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
    except ImportError as e:
        print("SKIP: %s" % e)
        sys.exit(77)
    os.makedirs(out, exist_ok=True)


class Kept:
    """A kept run: its exit status and output from NAME.log."""
    def __init__(self, log):
        self.stdout = open(log).read()
        self.returncode = 0 if "exit status 0" in self.stdout else 1


def records(trace):
    return [json.loads(x) for x in subprocess.run([dump, trace], capture_output=True,
                                                  text=True).stdout.splitlines()]


def analyze(name, extra):
    trace = os.path.join(out, name + ".apx")
    if src:
        return Kept(os.path.join(out, name + ".log")), records(trace)
    p = subprocess.run([apx, "analyze", "--force", "-o", trace] + extra +
                       ["--", sys.executable, os.path.join(HERE, "workload.py"), "50"],
                       capture_output=True, text=True, timeout=180)
    open(os.path.join(out, name + ".log"), "w").write(p.stdout + p.stderr)
    return p, records(trace)


p, recs = analyze("libcalls", [])
row(p.returncode == 0, "apx analyze exits 0", "exit %d" % p.returncode)
calls = json.loads(next(ln[6:] for ln in p.stdout.splitlines() if ln.startswith("CALLS ")))
syms = json.loads(next(ln[8:] for ln in p.stdout.splitlines() if ln.startswith("SYMBOLS ")))
used = [s for s in syms if any(k in s for k in ("Gemm", "gemm", "Matmul", "Execute",
                                                 "Convolution"))]
row(None, "libtorch_cuda's cuBLAS/cuDNN compute imports",
    ", ".join("%s%s" % (s, "" if s in WRAPPED else " (not wrapped)") for s in used))
rng = [r for r in recs if r.get("type") == "marker" and r.get("domain") in ("cuBLAS", "cuDNN")]
by = collections.Counter((r["domain"], r["name"]) for r in rng)
row(None, "ranges by function", dict(by))
nb = sum(v for (d, _), v in by.items() if d == "cuBLAS")
nd = sum(v for (d, _), v in by.items() if d == "cuDNN")
row(nb >= calls["gemm"], "a cuBLAS range per GEMM", "%d ranges, %d GEMMs" % (nb, calls["gemm"]))
row(nd >= calls["conv"], "a cuDNN range per convolution", "%d ranges, %d convs" %
    (nd, calls["conv"]))
hdr = next(r for r in recs if r["type"] == "header")
main = [r for r in rng if r.get("tid") == hdr.get("pid")]
row(len(main) == len(rng) > 0, "on the main thread", "%d of %d" % (len(main), len(rng)))
# the kernels launched inside a range: a GEMM range holds at least one launch
kl = sorted(r["launch_ns"] for r in recs if r.get("type") == "kernel" and r.get("launch_ns"))
if kl:
    import bisect
    held = sum(1 for r in rng if bisect.bisect_left(kl, r["start_ns"]) <
               bisect.bisect_right(kl, r["end_ns"]))
    row(None, "ranges holding a kernel launch", "%d of %d (launch times: --python-backward "
        "nvtx only)" % (held, len(rng)))
if not src:
    p2, recs2 = analyze("libcalls_none", ["--trace-libs", "none"])
    n2 = sum(1 for r in recs2 if r.get("type") == "marker" and
             r.get("domain") in ("cuBLAS", "cuDNN"))
    row(p2.returncode == 0 and n2 == 0, "--trace-libs none records none", "%d ranges, exit %d" %
        (n2, p2.returncode))
rep = subprocess.run([apx, "report", "--section", "nvtx", os.path.join(out, "libcalls.apx")],
                     capture_output=True, text=True).stdout
doc = json.loads(subprocess.run([apx, "report", "--format", "json", os.path.join(out, "libcalls.apx")],
                                capture_output=True, text=True).stdout)
row("cublasLtMatmul" in rep and "cudnnBackendExecute" in rep, "in the report's NVTX table",
    "cublasLtMatmul, cudnnBackendExecute rows")
row(doc.get("steady_state", {}).get("source") != "nvtx", "library calls are not steps",
    "steady state from %s" % doc.get("steady_state", {}).get("source"))
if not src:
    open(os.path.join(out, "libcalls.txt"), "w").write(rep)
print(rep[:1500])
print("libcalls_check: %d PASS, %d FAIL" % (rows.count("PASS"), rows.count("FAIL")))
sys.exit(1 if "FAIL" in rows else 0)
