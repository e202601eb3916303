"""pystack_check.py APX OUT [options] | APX --from DIR - the truth checks of apx's Python
stacks on the GPU machine (ctest gpu_pystack, label gpu; or by hand from the repository root):

    python3 tests/gpu/pystack/pystack_check.py build/apx "$OUT/pystack"

Runs each program of this folder without and with `apx analyze` (default options: Python stacks
at launches and 200 Hz sampling), reads `apx report --format json` of the trace and checks:

  slow_host     the user line with the most host time a step in the steady state
                (hotspots[].per_step_host_ns; where the report has no per-step values, the
                whole run's host_ns, which also counts `import torch` and CUDA's start-up) is
                the line marked `# APX-EXPECT: host` (inside textprep.tokenize); the first line
                (lines[0]) of the largest finding about the GPU's idle time (input-pipeline,
                gpu-starvation or dataloader-workers, if one fired) is in tokenize;
  item_sync     sync-frequency fired and its first line (lines[0]) is the line marked
                `# APX-EXPECT: sync`; the hotspot with the most syncs (a step, as above) is
                that line too;
  many_threads  exits 0 under apx with >= --min-threads threads in the process (its THREADS
                line); the report's `threads` has that many entries of one process, or a
                count of the sampler's says it saw that many; its step time under apx /
                without apx (median of --thread-pairs runs each) is at most --max-ratio.

The expected lines come from the marker comments in the sources, never from numbers written
here. Every program prints its median step time (STEP_MS); the ratios under apx are shown.
Writes into OUT: NAME.apx (the trace: few steps, to be committed as a fixture), NAME.json and
NAME.txt (its report), NAME.plain.log and NAME.apx.log (each run's output and exit status).
Prints one table (check, expected, got, result) last; exit 1 on any FAIL, 77 (skipped) without
an NVIDIA GPU and PyTorch with CUDA.

--from DIR checks an earlier run's folder instead (no GPU): the logs, and the report of
DIR/NAME.apx made again by APX (DIR/NAME.json where the trace or APX is missing)."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = ("slow_host", "item_sync", "many_threads")
IDLE_RULES = ("input-pipeline", "gpu-starvation", "dataloader-workers")

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("apx", help="the apx binary (e.g. build/apx)")
ap.add_argument("out", nargs="?",
                help="folder for traces, reports and logs (default: $OUT/pystack)")
ap.add_argument("--from", dest="src", metavar="DIR", help="check an earlier run's folder")
ap.add_argument("--programs", default=",".join(PROGRAMS))
ap.add_argument("--apx-opt", action="append", default=[], metavar="OPT",
                help="an option for apx analyze (repeatable), e.g. --apx-opt=--python-sampling=500")
ap.add_argument("--min-threads", type=int, default=200)
ap.add_argument("--max-ratio", type=float, default=1.5,
                help="many_threads: most step time under apx / without apx that passes")
ap.add_argument("--thread-pairs", type=int, default=2,
                help="many_threads: runs without and with apx (order: off, on, on, off, ...)")
ap.add_argument("--timeout", type=float, default=240, help="seconds a run may take")
args = ap.parse_args()

programs = [p for p in args.programs.split(",") if p]
for p in programs:
    if p not in PROGRAMS:
        sys.exit(f"pystack_check.py: unknown program '{p}' (known: {', '.join(PROGRAMS)})")
offline = args.src is not None
out = os.path.abspath(args.src if offline else
                      args.out or os.path.join(os.environ.get("OUT") or ".", "pystack"))
apx = os.path.abspath(args.apx)
rows = []   # (check, expected, got, result)


def row(check, expected, got, result):
    rows.append((check, str(expected), str(got), result))
    print(f"{result:5s} {check}: expected {expected}, got {got}", flush=True)


def verdict(ok):
    return "PASS" if ok else "FAIL"


# ---- where the planted lines are: the marker comments in this folder's sources

def markers(kind):
    """[(path, line, func)] of the lines carrying `# APX-EXPECT: kind` (func: the enclosing def)"""
    found = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.py"))):
        if os.path.basename(path) == os.path.basename(__file__):
            continue
        func = "<module>"
        for n, text in enumerate(open(path, encoding="utf-8"), 1):
            m = re.match(r"\s*(?:async\s+)?def\s+(\w+)", text)
            if m:
                func = m.group(1)
            if re.search(r"#\s*APX-EXPECT:\s*" + kind + r"\b", text):
                found.append((path, n, func))
    return found


def one_marker(kind):
    found = markers(kind)
    if len(found) != 1:
        sys.exit(f"pystack_check.py: want one '# APX-EXPECT: {kind}' line in {HERE}, "
                 f"found {len(found)}")
    return found[0]


def same_line(entry, where):
    """a report's {file, line} entry is the marked line (same file name and line number: the
    report may give the path as the program saw it, absolute or relative)"""
    if not entry:
        return False
    path, line, _ = where
    f = str(entry.get("file", ""))
    try:
        same = int(entry.get("line", -1)) == line
    except (TypeError, ValueError):
        same = False
    return same and os.path.basename(f) == os.path.basename(path)


def show(entry, key=None):
    if not entry:
        return "none"
    s = f"{os.path.basename(str(entry.get('file', '?')))}:{entry.get('line', '?')} " \
        f"({entry.get('func', '?')})"
    if key and key in entry:
        v = entry[key]
        s += f" {key} {v / 1e6:.1f} ms" if key.endswith("ns") and isinstance(v, (int, float)) \
            else f" {key} {v}"
    return s


def where_str(where):
    return f"{os.path.basename(where[0])}:{where[1]} ({where[2]})"


# ---- running the programs

def gpu_here():
    """None when an NVIDIA GPU and PyTorch with CUDA are here, else why not"""
    if not shutil.which("nvidia-smi"):
        return "nvidia-smi not found"
    p = subprocess.run([sys.executable, "-c", "import sys, torch; "
                        "sys.exit(0 if torch.cuda.is_available() else 1)"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else "PyTorch without CUDA (or no PyTorch) in " + \
        sys.executable + (": " + p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")


def collector_env():
    """The environment for the runs: no profiler of an outer run; libcupti's folder on
    LD_LIBRARY_PATH when the collector does not find it by itself (as tests/gpu/run_all.sh)"""
    env = dict(os.environ)
    for k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "NVTX_INJECTION64_PATH"):
        env.pop(k, None)
    inject = env.get("APX_INJECT_LIB") or os.path.join(os.path.dirname(os.path.realpath(apx)),
                                                       "libapx-inject.so")
    if os.path.exists(inject) and shutil.which("ldd"):
        missing = "not found" in subprocess.run(["ldd", inject], capture_output=True,
                                                text=True).stdout
        if missing:
            hit = subprocess.run("find / -name 'libcupti.so.13*' 2>/dev/null | head -1",
                                 shell=True, capture_output=True, text=True).stdout.strip()
            if hit:
                d = os.path.dirname(hit)
                print(f"libcupti not on the collector's RUNPATH; using {d}", flush=True)
                env["LD_LIBRARY_PATH"] = d + (":" + env["LD_LIBRARY_PATH"]
                                              if env.get("LD_LIBRARY_PATH") else "")
    return env


def run(cmd, log, env):
    """Runs cmd in its own process group (all of it killed after --timeout); writes stdout,
    stderr and a last line '--- exit status N, S s' to log; returns (status, output)"""
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors="replace", start_new_session=True)
    try:
        o, e = p.communicate(timeout=args.timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        o, e = p.communicate()
        rc = 124
        e += f"\n--- killed after {args.timeout:.0f} s (timeout)"
    text = o + e
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n" + text +
                f"\n--- exit status {rc}, {time.time() - t0:.1f} s\n")
    return rc, text


def logged(log):
    """(status, output) of a run from its log (--from)"""
    try:
        text = open(log, encoding="utf-8", errors="replace").read()
    except OSError:
        return None, ""
    m = re.findall(r"^--- exit status (-?\d+)", text, re.M)
    return (int(m[-1]) if m else None), text


def value(text, key):
    """the number of the last 'KEY value' line of a program's output"""
    got = re.findall(r"^" + key + r" (-?[0-9.]+)", text, re.M)
    return float(got[-1]) if got else None


def report(name):
    """The JSON report of OUT/NAME.apx (also written to NAME.json and NAME.txt), or the error"""
    trace, js = os.path.join(out, name + ".apx"), os.path.join(out, name + ".json")
    if os.path.exists(trace) and os.access(apx, os.X_OK):
        p = subprocess.run([apx, "report", "--format", "json", "--top", "1000", trace],
                           capture_output=True, text=True)
        if p.returncode != 0 or not p.stdout.strip():
            return None, f"apx report exit {p.returncode}: {p.stderr.strip()[-300:]}"
        if not offline:
            open(js, "w").write(p.stdout)
            t = subprocess.run([apx, "report", trace], capture_output=True, text=True)
            open(os.path.join(out, name + ".txt"), "w").write(t.stdout + t.stderr)
        text = p.stdout
    elif os.path.exists(js):
        text = open(js).read()
    else:
        return None, f"no trace {os.path.basename(trace)}"
    try:
        return json.loads(text), None
    except ValueError as e:
        return None, f"report is not JSON: {e}"


def runs(name, pairs, env):
    """[(status, output)] of the runs without apx and with apx (pairs of each, in the order
    off, on, on, off, ...); the first run with apx writes OUT/NAME.apx, later ones a scratch
    trace that is deleted"""
    plain, under = [], []
    prog = [sys.executable, os.path.join(HERE, name + ".py")]
    for i in range(2 * pairs):
        on = (i % 4) in (1, 2)
        k = len(under if on else plain)
        suffix = "" if k == 0 else f".{k + 1}"
        if offline:
            r = logged(os.path.join(out, f"{name}.{'apx' if on else 'plain'}{suffix}.log"))
            if r[0] is not None or k == 0:
                (under if on else plain).append(r)
            continue
        if on:
            trace = os.path.join(out, name + ".apx") if k == 0 else \
                os.path.join(out, f"{name}.scratch.apx")
            cmd = [apx, "analyze", "-f", "-o", trace, "--python", sys.executable] + \
                args.apx_opt + prog[1:]
        else:
            cmd = prog
        print(f"  {name}: run {i + 1} of {2 * pairs}, {'with' if on else 'without'} apx",
              flush=True)
        r = run(cmd, os.path.join(out, f"{name}.{'apx' if on else 'plain'}{suffix}.log"), env)
        (under if on else plain).append(r)
        for f in glob.glob(os.path.join(out, f"{name}.scratch.apx*")):
            os.unlink(f)
        if r[0] == 124:     # a hang: no more runs of this program
            break
    return plain, under


def ran(name, plain, under):
    """the rows saying each run exited 0; True when the first of each did"""
    rcs = [r[0] for r in plain], [r[0] for r in under]
    ok = all(rc == 0 for rc in rcs[0] + rcs[1]) and rcs[0] and rcs[1]
    got = f"without apx {rcs[0]}, with apx {rcs[1]}"
    bad = [t for rc, t in plain + under if rc != 0]
    if bad:
        got += ": " + bad[0].strip()[-200:].replace("\n", " | ")
    row(f"{name} runs", "exit 0", got, verdict(ok))
    return bool(plain and under and plain[0][0] == 0 and under[0][0] == 0)


def ratio_row(name, plain, under):
    """the step times without and with apx (median of the runs) and their ratio"""
    p = [value(t, "STEP_MS") for rc, t in plain if rc == 0]
    u = [value(t, "STEP_MS") for rc, t in under if rc == 0]
    p, u = [x for x in p if x], [x for x in u if x]
    if not p or not u:
        return None, "no STEP_MS line"
    r = statistics.median(u) / statistics.median(p)
    return r, f"{statistics.median(p):.2f} -> {statistics.median(u):.2f} ms/step = {r:.3f}x " \
        f"(n={len(p)}+{len(u)})"


def common_rows(name, doc):
    """trace size, what the file record says of degraded collection (information)"""
    trace = os.path.join(out, name + ".apx")
    size = sum(os.path.getsize(f) for f in glob.glob(trace + "*")) if os.path.exists(trace) else 0
    deg = "; ".join(f.get("degraded", "") for f in doc.get("files", []) if f.get("degraded"))
    row(f"{name} trace", "-", f"{size / 1e3:.0f} kB" + (f", degraded: {deg}" if deg else ""),
        "INFO")


def user_lines(doc):
    """the hotspots of user code (user: 1; a line with no user frame above it is a library's)"""
    return [h for h in doc.get("hotspots") or [] if h.get("user", 1)]


def per_step(h, key):
    """a hotspot's steady-state value a step: per_step_KEY, or per_step: {KEY} (None if none)"""
    v = h.get("per_step_" + key)
    if v is None and isinstance(h.get("per_step"), dict):
        v = h["per_step"].get(key)
    return v if isinstance(v, (int, float)) else None


def top_rows(name, doc, key, where, what):
    """The user line with the most `key` must be the marked one: a step in the steady state
    (per_step_KEY: what the issue asks, start-up apart) decides when the report has it, the
    whole run (KEY, which counts `import torch` and CUDA's start-up too) is shown beside it
    (it decides when there is no per-step value)."""
    hs = user_lines(doc)
    steady = [h for h in hs if per_step(h, key) is not None]
    whole = [h for h in hs if isinstance(h.get(key), (int, float))]
    top_s = max(steady, key=lambda h: per_step(h, key)) if steady else None
    top_w = max(whole, key=lambda h: h[key]) if whole else None
    if top_s:
        v = per_step(top_s, key)
        row(f"{name} {what} a step", where_str(where),
            show(top_s) + (f" {v / 1e6:.2f} ms" if key.endswith("_ns") else f" {v:.1f}") +
            " a step", verdict(same_line(top_s, where)))
    row(f"{name} {what} (whole run)", where_str(where),
        show(top_w, key) if top_w else f"no hotspots with {key} in the report",
        "INFO" if top_s else verdict(same_line(top_w, where)))


def finding(doc, rule):
    for f in doc.get("findings", []) or []:
        if f.get("rule") == rule:
            return f
    return None


def fired(doc):
    return ", ".join(str(f.get("rule")) for f in doc.get("findings", []) or []) or "none"


# ---- the checks

def check_slow_host(env):
    name, host = "slow_host", one_marker("host")
    plain, under = runs(name, 1, env)
    if not ran(name, plain, under):
        return
    doc, err = report(name)
    if err:
        row(f"{name} report", "JSON", err, "FAIL")
        return
    common_rows(name, doc)
    top_rows(name, doc, "host_ns", host, "top host hotspot")
    # the finding that holds the most of the GPU's idle time must name tokenize first; the
    # others that fired (smaller, maybe about other gaps) are shown
    idle = sorted((f for f in doc.get("findings") or [] if f.get("rule") in IDLE_RULES),
                  key=lambda f: -(f.get("saving_ns") or 0))
    for i, f in enumerate(idle):
        lines = f.get("lines") or []
        first = lines[0] if lines else None
        named = [k for k, x in enumerate(lines) if x.get("func") == host[2] or same_line(x, host)]
        ok = bool(first) and (first.get("func") == host[2] or same_line(first, host))
        got = (show(first, "ns") if first else "no lines") + \
            ("" if ok or not named else f"; {host[2]} is line {named[0] + 1}")
        row(f"{name} {f.get('rule')} first line", f"in {host[2]}", got,
            verdict(ok) if i == 0 else "INFO")
    if not idle:
        row(f"{name} idle finding's first line", f"in {host[2]}",
            f"none of {', '.join(IDLE_RULES)} fired (fired: {fired(doc)})", "SKIP")
    r, got = ratio_row(name, plain, under)
    row(f"{name} step ratio apx/plain", "-", got, "INFO")


def check_item_sync(env):
    name, sync = "item_sync", one_marker("sync")
    plain, under = runs(name, 1, env)
    if not ran(name, plain, under):
        return
    doc, err = report(name)
    if err:
        row(f"{name} report", "JSON", err, "FAIL")
        return
    common_rows(name, doc)
    f = finding(doc, "sync-frequency")
    if not f:
        row(f"{name} sync-frequency first line", where_str(sync),
            f"no sync-frequency finding (fired: {fired(doc)})", "FAIL")
    else:
        lines = f.get("lines") or []
        first = lines[0] if lines else None
        row(f"{name} sync-frequency first line", where_str(sync),
            show(first, "count") if first else "no lines", verdict(same_line(first, sync)))
    top_rows(name, doc, "syncs", sync, "hotspot with most syncs")
    r, got = ratio_row(name, plain, under)
    row(f"{name} step ratio apx/plain", "-", got, "INFO")


def thread_counts(doc):
    """[(path, value)]: integer fields of the report whose key names threads, outside the
    per-thread list itself (the sampler's own count, if the report has one; cpu's threads_max)"""
    found = []

    def walk(x, path):
        if isinstance(x, dict):
            for k, v in x.items():
                if "thread" in k.lower() and isinstance(v, int) and not isinstance(v, bool):
                    found.append((path + "." + k, v))
                elif path != "" or k != "threads":
                    walk(v, path + "." + k)
        elif isinstance(x, list):
            for i, v in enumerate(x[:50]):
                walk(v, f"{path}[{i}]")
    walk(doc, "")
    return found


def check_many_threads(env):
    name = "many_threads"
    plain, under = runs(name, max(1, args.thread_pairs), env)
    ok = ran(name, plain, under)
    if under:
        n = value(under[0][1], "THREADS")
        row(f"{name} threads under apx", f">= {args.min_threads}",
            "no THREADS line" if n is None else int(n),
            verdict(n is not None and n >= args.min_threads))
    if not ok:
        return
    doc, err = report(name)
    if err:
        row(f"{name} report", "JSON", err, "FAIL")
        return
    common_rows(name, doc)
    threads = doc.get("threads")
    per_pid = {}
    for t in threads if isinstance(threads, list) else []:
        per_pid[t.get("pid")] = per_pid.get(t.get("pid"), 0) + 1
    n = max(per_pid.values(), default=0)     # the threads of the training process
    counts = thread_counts(doc)
    sampler = [(p, v) for p, v in counts if re.search(r"samp|pystack|python", p, re.I)]
    best = max((v for _, v in sampler), default=0)
    got = f"threads[] {len(threads)} entries, {n} of one process" \
        if isinstance(threads, list) else "no threads[] in the report"
    if counts:
        got += "; " + ", ".join(f"{p.lstrip('.')} {v}" for p, v in counts[:4])
    row(f"{name} threads sampled", f">= {args.min_threads}", got,
        verdict(n >= args.min_threads or best >= args.min_threads))
    r, got = ratio_row(name, plain, under)
    row(f"{name} step ratio apx/plain", f"<= {args.max_ratio:.2f}x", got,
        verdict(r is not None and r <= args.max_ratio))


def table():
    heads = ("check", "expected", "got", "result")
    cut = [(c, e if len(e) <= 28 else e[:25] + "...", g if len(g) <= 56 else g[:53] + "...", r)
           for c, e, g, r in rows]
    w = [max(len(h), *(len(x[i]) for x in cut)) if cut else len(h) for i, h in enumerate(heads)]
    print()
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(heads)).rstrip())
    print("  ".join("-" * x for x in w))
    for x in cut:
        print("  ".join(x[i].ljust(w[i]) for i in range(4)).rstrip())
    fails = sum(r[3] == "FAIL" for r in rows)
    passes = sum(r[3] == "PASS" for r in rows)
    print(f"\npystack: {passes} passed, {fails} failed (folder {out})")
    return 1 if fails else 0


def main():
    if offline:
        if not os.path.isdir(out):
            sys.exit(f"pystack_check.py: --from {out}: no such folder")
        env = None
    else:
        why = gpu_here()
        if why:
            print(f"skipped: {why} (tests/gpu/pystack needs an NVIDIA GPU and PyTorch with "
                  "CUDA: the GPU machine)")
            sys.exit(77)
        if not os.access(apx, os.X_OK):
            sys.exit(f"pystack_check.py: {apx} is not an executable apx binary")
        os.makedirs(out, exist_ok=True)
        env = collector_env()
        print(f"pystack: {', '.join(programs)} with and without {apx} analyze "
              f"{' '.join(args.apx_opt)}; output in {out}", flush=True)
    checks = {"slow_host": check_slow_host, "item_sync": check_item_sync,
              "many_threads": check_many_threads}
    for p in programs:
        checks[p](env)
    sys.exit(table())


if __name__ == "__main__":
    main()
