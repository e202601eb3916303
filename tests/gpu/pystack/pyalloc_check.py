#!/usr/bin/env python3
"""pyalloc_check.py APX [OUT] | APX --from DIR - on the GPU: the Python stack of
the largest device and pinned allocations and of failed ones (ctest gpu_pyalloc, label gpu; or
by hand from the repository root):

    python3 tests/gpu/pystack/pyalloc_check.py build/apx "$OUT/pyalloc"

Runs pyalloc.py under `apx analyze` (Python stacks at launches and allocations: the default),
reads `apx report --format json` of the trace and checks:

  - apx analyze exits 0 and the program caught its planted out-of-memory (OOM_CAUGHT 1);
  - memory.largest_allocations: the largest device allocation of device 0 is the 4 GiB tensor
    and its line is the one marked `# APX-EXPECT: alloc`; the largest pinned one's line is
    the one marked `# APX-EXPECT: pinned`;
  - memory.failed_allocations: at least one, the first asked for more than the device has,
    its error is 2 (CUDA_ERROR_OUT_OF_MEMORY) and its line is the one marked
    `# APX-EXPECT: oom`;
  - the memory-capacity finding about failed allocations fired and its first line
    (lines[0]) is that line too;
  - the failed calls allocated nothing: the device peak stays under the device's memory.

The expected lines come from the marker comments in pyalloc.py, never from numbers written
here. Writes into OUT: pyalloc.apx, pyalloc.json and pyalloc.txt (its report), pyalloc.log (the
run's output and exit status). Prints one row per check (PASS, FAIL or INFO) and exits 1 on a
FAIL, 77 (skipped) without an NVIDIA GPU and PyTorch with CUDA. --from DIR checks an earlier
run's folder again without a GPU (the report made anew from DIR/pyalloc.apx)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "pyalloc.py")
ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("apx", help="the apx binary (e.g. build/apx)")
ap.add_argument("out", nargs="?", help="folder for the trace, reports and log "
                "(default: $OUT/pyalloc)")
ap.add_argument("--from", dest="src", metavar="DIR", help="check an earlier run's folder")
ap.add_argument("--timeout", type=float, default=240, help="seconds the run may take")
args = ap.parse_args()
offline = args.src is not None
out = os.path.abspath(args.src if offline else
                      args.out or os.path.join(os.environ.get("OUT") or ".", "pyalloc"))
apx = os.path.abspath(args.apx)
rows = []


def row(check, expected, got, result):
    rows.append(result)
    print(f"{result:5s} {check}: expected {expected}, got {got}", flush=True)


def verdict(ok):
    return "PASS" if ok else "FAIL"


def marker(kind):
    """(path, line, func) of the line of pyalloc.py carrying `# APX-EXPECT: kind`"""
    found, func = [], "<module>"
    for n, text in enumerate(open(PROG, encoding="utf-8"), 1):
        m = re.match(r"\s*def\s+(\w+)", text)
        if m:
            func = m.group(1)
        if re.search(r"#\s*APX-EXPECT:\s*" + kind + r"\s*$", text):
            found.append((PROG, n, func))
    if len(found) != 1:
        sys.exit(f"pyalloc_check.py: want one '# APX-EXPECT: {kind}' line in {PROG}, "
                 f"found {len(found)}")
    return found[0]


def same_line(entry, where):
    """a report entry's {file, line} is the marked line (same file name and line number)"""
    if not entry or entry.get("line") is None:
        return False
    return int(entry["line"]) == where[1] and \
        os.path.basename(str(entry.get("file") or "")) == os.path.basename(where[0])


def show(entry):
    if not entry:
        return "none"
    if entry.get("line") is None:
        return "no line (no Python stack)"
    return f"{os.path.basename(str(entry.get('file')))}:{entry.get('line')} ({entry.get('func')})"


def where_str(w):
    return f"{os.path.basename(w[0])}:{w[1]} ({w[2]})"


def gpu_here():
    """None when an NVIDIA GPU and PyTorch with CUDA are here, else why not"""
    if not shutil.which("nvidia-smi"):
        return "nvidia-smi not found"
    p = subprocess.run([sys.executable, "-c", "import sys, torch; "
                        "sys.exit(0 if torch.cuda.is_available() else 1)"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else "PyTorch without CUDA (or no PyTorch) in " + \
        sys.executable


def value(text, key):
    got = re.findall(r"^" + key + r" (-?[0-9.]+)", text, re.M)
    return float(got[-1]) if got else None


where = {k: marker(k) for k in ("alloc", "pinned", "oom")}
trace, log = os.path.join(out, "pyalloc.apx"), os.path.join(out, "pyalloc.log")
if offline:
    try:
        text = open(log, encoding="utf-8", errors="replace").read()
    except OSError:
        text = ""
    m = re.findall(r"^--- exit status (-?\d+)", text, re.M)
    rc = int(m[-1]) if m else None
else:
    why = gpu_here()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    for k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "NVTX_INJECTION64_PATH"):
        env.pop(k, None)
    cmd = [apx, "analyze", "-f", "-o", trace, "--python", sys.executable, PROG]
    try:
        p = subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True,
                           errors="replace", timeout=args.timeout)
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = 124, f"killed after {args.timeout:.0f} s (timeout): {e}"
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n" + text + f"\n--- exit status {rc}\n")
row("apx analyze pyalloc.py", "exit 0", rc, verdict(rc == 0))
row("planted out-of-memory caught", "OOM_CAUGHT 1", value(text, "OOM_CAUGHT"),
    verdict(value(text, "OOM_CAUGHT") == 1))
total = value(text, "TOTAL_BYTES")

doc = None
if os.path.exists(trace) and os.access(apx, os.X_OK):
    r = subprocess.run([apx, "report", "--format", "json", "--top", "1000", trace],
                       capture_output=True, text=True)
    if r.returncode == 0:
        doc = json.loads(r.stdout)
        if not offline:
            open(os.path.join(out, "pyalloc.json"), "w").write(r.stdout)
            t = subprocess.run([apx, "report", trace], capture_output=True, text=True)
            open(os.path.join(out, "pyalloc.txt"), "w").write(t.stdout + t.stderr)
    else:
        row("apx report", "exit 0", f"exit {r.returncode}: {r.stderr.strip()[-300:]}", "FAIL")
elif os.path.exists(os.path.join(out, "pyalloc.json")):
    doc = json.load(open(os.path.join(out, "pyalloc.json")))
if doc is None:
    row("report", "a JSON report", "none", "FAIL")
    sys.exit(1)

mem = doc.get("memory") or {}
largest = mem.get("largest_allocations") or []
failed = mem.get("failed_allocations") or []
dev = [a for a in largest if a.get("device") == 0 and a.get("kind") == "device"]
pin = [a for a in largest if a.get("kind") == "pinned"]
top = max(dev, key=lambda a: a.get("bytes", 0)) if dev else None
row("largest device allocation", "4 GiB at " + where_str(where["alloc"]),
    f"{top['bytes'] / 2**30:.2f} GiB at {show(top)}" if top else "none",
    verdict(top is not None and top.get("bytes") == 4 << 30 and same_line(top, where["alloc"])))
ptop = max(pin, key=lambda a: a.get("bytes", 0)) if pin else None
row("largest pinned allocation", ">= 256 MiB at " + where_str(where["pinned"]),
    f"{ptop['bytes'] / 2**20:.0f} MiB at {show(ptop)}" if ptop else "none",
    verdict(ptop is not None and ptop.get("bytes", 0) >= 256 << 20 and
            same_line(ptop, where["pinned"])))
f0 = failed[0] if failed else None
row("failed allocations", ">= 1", len(failed), verdict(bool(failed)))
row("first failed allocation", "CUDA error 2, more than the device has, at " +
    where_str(where["oom"]),
    f"error {f0.get('error')} ({f0.get('error_name')}), {f0.get('bytes', 0) / 2**30:.1f} GiB "
    f"at {show(f0)}" if f0 else "none",
    verdict(f0 is not None and f0.get("error") == 2 and
            (total is None or f0.get("bytes", 0) > total) and same_line(f0, where["oom"])))
cap = [f for f in doc.get("findings") or [] if f.get("rule") == "memory-capacity" and
       "failed" in f.get("title", "")]
lines = cap[0].get("lines") or [] if cap else []
row("memory-capacity names the failed line", where_str(where["oom"]),
    (cap[0]["title"] + "; lines[0] " + show(lines[0] if lines else None)) if cap
    else "no memory-capacity finding about failed allocations",
    verdict(bool(cap) and bool(lines) and same_line(lines[0], where["oom"])))
peak, cap_bytes = mem.get("device_peak_bytes"), mem.get("device_total_bytes")
row("failed calls not in the peak", "peak < device memory",
    f"peak {peak} of {cap_bytes}",
    verdict(isinstance(peak, int) and isinstance(cap_bytes, int) and peak < cap_bytes))
deg = "; ".join(f.get("degraded", "") for f in doc.get("files", []) if f.get("degraded"))
row("degraded notes", "-", deg or "none", "INFO")
sys.exit(1 if "FAIL" in rows else 0)
