"""run.py BUILD OUT [--reps R] [--separate-reps S] [--pairs N] [--cases a,b] [--traced-reps T]
[--programs PATH] [--dry] - the development
suite on the GPU machine: every case of programs.py timed without a profiler, then one run of
each variant under `apx analyze` (the trace the analysis is tested on); the three clean models
likewise. --programs runs another programs module of the same command line instead (the
held-out suite, tests/gpu/heldout/programs.py): its CASES, PAIRABLE and CLEAN (the clean
models; without CLEAN the dev suite's resnet, gpt and hf). --dry: every program with
APX_SUITE_DRY=1 (a module that honours it runs tiny on the CPU) and no traced runs, to check
the pipeline without a GPU. Writes OUT/<case>_<variant>.apx and OUT/facts.json (step times,
the planted - fixed difference, the rule each case plants, the steps the traced runs ran), the
input of tests/integration/suite-check.py once copied to tests/fixtures/suite/ (the held-out
suite's: tests/fixtures/heldout/).

The measurement: on the H200 machine the same program's step time varies between processes
by up to 1.8x (some processes run at ~55 % speed from start to end; adjacent blocks of one
process agree within a few %), so the difference of two separate processes' step times is
unreliable and suite-check's "within 30 %" passed or failed by luck. So a case whose variants
can share a process (programs.PAIRABLE) is measured by R processes of `programs.py CASE
paired` (N pairs of adjacent planted/fixed blocks each, in the order P F F P P F ...), and its
diff_ms is paired_diff_ms, the median of the pairs' differences over all R processes; its
per-variant fields (runs_ms: each process's median, planted_ms, fixed_ms: their medians) are
for information. A case that cannot be paired (see PAIRABLE's reason) is timed as before, in
separate processes per variant, but S >= 5 of each, and diff_ms is the difference of the
variants' medians. The clean models: R processes each. Every kind of run is interleaved: round
r runs one process of every case (alternating planted/fixed first for separate ones), so a
slow period of the machine falls on all cases. About 18 minutes: run.sh runs it in parts
(--part I/N: every N-th case), one device call each, and merges the parts' facts.json.

facts.json, per case: rule (null for a clean model), method ("paired" or "separate"),
runs_ms, <variant>_ms, diff_ms (what suite-check compares the estimate with), for paired
ones also paired_diff_ms, paired_diffs_ms (every pair's difference, process by process) and
paired_runs (each process's SUITEPAIR medians and blocks); <variant>_traced_ms and
<variant>_traced_steps from the traced runs (and <variant>_traced_warnings: apx analyze's
warnings, when it gave any); for cases timed in separate processes also
runs_rss_bytes (each process's resident set after its steps) and diff_rss_bytes (planted -
fixed, of their medians: what suite-check compares redundant-replication's bytes with)."""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("out")
ap.add_argument("--reps", type=int, default=3,
                help="paired processes per pairable case; processes per clean model")
ap.add_argument("--separate-reps", type=int, default=5,
                help="processes per variant of a case that cannot be paired (5 at least)")
ap.add_argument("--pairs", type=int, default=6, help="pairs of blocks per paired process")
ap.add_argument("--cases", default="")
ap.add_argument("--traced-reps", type=int, default=1, metavar="T",
                help="traced runs per variant (every run's ms per step in "
                "<variant>_traced_runs_ms; the trace of the one nearest the unprofiled median "
                "is kept, its index in <variant>_traced_kept): the machine's process-to-process "
                "spread otherwise decides how fast the traced run went")
ap.add_argument("--part", default="", metavar="I/N",
                help="only every N-th of the cases and clean models, from the I-th (1-based): "
                "the suite in N device calls (run.sh part)")
ap.add_argument("--programs", default=os.path.join(here, "programs.py"), metavar="PATH",
                help="the programs module to run (default: the dev suite's, beside run.py)")
ap.add_argument("--dry", action="store_true",
                help="APX_SUITE_DRY=1 for every program, no traced runs (no GPU needed)")
a = ap.parse_args()
prog = os.path.abspath(a.programs)
spec = importlib.util.spec_from_file_location("programs", prog)
programs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(programs)                  # the suite's tables
CASES, PAIRABLE = programs.CASES, programs.PAIRABLE
if a.dry:
    os.environ["APX_SUITE_DRY"] = "1"

apx = os.path.join(os.path.abspath(a.build), "apx")
os.makedirs(a.out, exist_ok=True)
cases = [c for c in CASES if not a.cases or c in a.cases.split(",")]
clean = [c for c in getattr(programs, "CLEAN", ("resnet", "gpt", "hf"))
         if not a.cases or c in a.cases.split(",")]
sep_reps = max(5, a.separate_reps)
if a.part:
    try:
        i, n = (int(x) for x in a.part.split("/"))
        assert 1 <= i <= n
    except (ValueError, AssertionError):
        sys.exit(f"run.py: --part wants I/N with 1 <= I <= N, not {ascii(a.part)}")
    keep = set((cases + clean)[i - 1::n])
    cases, clean = [c for c in cases if c in keep], [c for c in clean if c in keep]


def lines(args, what):
    """stdout lines of programs.py ARGS, or None (said) when it failed."""
    p = subprocess.run([sys.executable, prog] + args, capture_output=True, text=True)
    if p.returncode == 0:
        return p.stdout.splitlines()
    print(f"  {what}: FAILED rc {p.returncode} {p.stderr[-300:]}", flush=True)
    return None


def plain(case, variant):
    """ms per step and the resident set's bytes after the steps (None when not said)."""
    ms = rss = None
    for line in lines([case, variant], f"{case} {variant}") or []:
        if line.startswith("SUITE "):
            ms = float(line.split()[3])
        elif line.startswith("RSS "):
            rss = int(line.split()[3])
    return ms, rss


def paired(case):
    """One process of `programs.py CASE paired`: its medians, pair differences and blocks."""
    out = lines([case, "paired", "--pairs", str(a.pairs)], f"{case} paired") or []
    r = {}
    for line in out:
        w = line.split(maxsplit=2)
        if w[0] == "SUITEPAIR":
            v = line.split()
            r.update(planted_ms=float(v[2]), fixed_ms=float(v[3]), diff_ms=float(v[4]))
        elif w[0] == "PAIRS":
            r["diffs_ms"] = json.loads(w[2])
        elif w[0] == "BLOCKS":
            r["blocks_ms"] = json.loads(w[2])
    if "diff_ms" in r and r.get("diffs_ms"):
        return r
    print(f"  {case} paired: no SUITEPAIR/PAIRS lines", flush=True)
    return None


def trace_path(case, variant, rep=0):
    return os.path.join(a.out, f"{case}_{variant}.apx" if not rep else f".rep{rep}_{case}_{variant}.apx")


def traced(case, variant, rep=0):
    """The traced run: (steps, ms per step, apx's warnings) or (None, None, warnings); a
    repetition (rep > 0) writes its trace beside (trace_path), for keep_nearest()."""
    t = trace_path(case, variant, rep)
    p = subprocess.run([apx, "analyze", "-q", "--force", "-o", t, "--", sys.executable, prog, case,
                        variant], capture_output=True, text=True)
    warn = [ascii(x)[1:-1][:300] for x in p.stderr.splitlines() if "warning" in x][:5]
    for line in p.stdout.splitlines():
        if line.startswith("SUITE "):
            return int(line.split()[4]), float(line.split()[3]), warn
    print(f"  {case} {variant} traced: FAILED rc {p.returncode} {p.stderr[-300:]}", flush=True)
    return None, None, warn


def keep_nearest(case, variant, runs, plain_ms):
    """Of the traced runs (ms per step; None: failed), keep the trace of the one nearest the
    unprofiled median plain_ms as the case's trace (the others are removed) and return its
    index: the machine's process-to-process spread (up to 1.8x) otherwise decides how fast the
    traced process ran, and the estimate with it (sync_item's 1.13x, 2026-12-03, with the
    collector costing it 1.015x). Without plain_ms or a run: the first."""
    ok = [i for i, ms in enumerate(runs) if ms is not None]
    best = min(ok, key=lambda i: abs(runs[i] - plain_ms)) if ok and plain_ms else 0
    if best:
        os.replace(trace_path(case, variant, best), trace_path(case, variant))
    for r in range(1, len(runs)):
        if os.path.exists(trace_path(case, variant, r)):
            os.remove(trace_path(case, variant, r))
    return best


def pairable(case):
    return case in PAIRABLE and PAIRABLE[case][0]


def variants(case):
    return ["clean"] if case in clean else ["planted", "fixed"]


facts = {}
for case in cases + clean:
    facts[case] = {"rule": CASES.get(case), "runs_ms": {v: [] for v in variants(case)},
                   "method": "paired" if pairable(case) else "separate"}
    if pairable(case):
        facts[case]["paired_runs"] = []


def summarize(case):
    """The case's medians and diff_ms from what its runs gave so far."""
    f = facts[case]
    if pairable(case):
        f["runs_ms"] = {v: [r[v + "_ms"] for r in f["paired_runs"]] for v in variants(case)}
    for v in variants(case):
        if f["runs_ms"][v]:
            f[f"{v}_ms"] = statistics.median(f["runs_ms"][v])
    if pairable(case):
        diffs = [d for r in f["paired_runs"] for d in r["diffs_ms"]]
        if diffs:
            f["paired_diffs_ms"] = diffs
            f["paired_diff_ms"] = statistics.median(diffs)
            # the measured saving suite-check compares: the in-process paired difference
            f["diff_ms"] = f["paired_diff_ms"]
    elif "planted_ms" in f and "fixed_ms" in f:
        f["diff_ms"] = f["planted_ms"] - f["fixed_ms"]
    rss = f.get("runs_rss_bytes", {})
    if rss.get("planted") and rss.get("fixed"):     # a memory cost (redundant-replication)
        f["diff_rss_bytes"] = statistics.median(rss["planted"]) - statistics.median(rss["fixed"])


def save():
    with open(os.path.join(a.out, "facts.json"), "w") as fh:
        json.dump(facts, fh, indent=1, sort_keys=True)


t0 = time.time()
for r in range(max(a.reps, sep_reps)):             # round r: one process of every case
    for case in cases + clean:
        f = facts[case]
        if r >= (sep_reps if f["method"] == "separate" and case not in clean else a.reps):
            continue
        if pairable(case):
            p = paired(case)
            if p is not None:
                f["paired_runs"].append(p)
        else:
            vs = variants(case)
            for v in (vs if r % 2 == 0 else vs[::-1]):
                ms, rss = plain(case, v)
                if ms is not None:
                    f["runs_ms"][v].append(ms)
                if rss is not None:
                    f.setdefault("runs_rss_bytes", {}).setdefault(v, []).append(rss)
        summarize(case)
    save()
    print(f"{time.time() - t0:6.0f} s  round {r + 1} done", flush=True)
for case in cases + clean:
    f = facts[case]
    for v in variants(case) if not a.dry else []:
        steps, ms, warn = traced(case, v)
        f[f"{v}_traced_steps"] = steps
        f[f"{v}_traced_ms"] = ms
        if warn:    # e.g. the collector's cost per launch not measured
            f[f"{v}_traced_warnings"] = warn
        if a.traced_reps > 1:
            runs = [ms] + [traced(case, v, r)[1] for r in range(1, a.traced_reps)]
            f[f"{v}_traced_runs_ms"] = runs
            kept = keep_nearest(case, v, runs, f.get(f"{v}_ms"))
            f[f"{v}_traced_kept"] = kept
            f[f"{v}_traced_ms"] = runs[kept]
    save()
    how = f"paired, {len(f.get('paired_diffs_ms', []))} pairs" if pairable(case) else \
        f"separate, {min(len(x) for x in f['runs_ms'].values())}+ runs"
    print(f"{time.time() - t0:6.0f} s  {case:16s} " + "  ".join(
        f"{v} {f.get(v + '_ms', float('nan')):8.3f} ms" for v in variants(case)) +
        (f"  diff {f['diff_ms']:.3f} ms ({how})" if "diff_ms" in f else ""), flush=True)
print("done", flush=True)
