"""dram_spread.py BUILD OUT [SHIFTS] - how much a kernel's DRAM counters in the program's cache
state depend on where its buffers lie in memory, and apx's one-pass values against ncu's over
the same spread (replay_check.py compares one process of each tool, and the
attention kernel's DRAM writes differed by up to 8 % from run to run of either tool).

For each shift N of SHIFTS (MiB, default 0,6,18,42,90; replay_workload.py takes N MiB of device
memory first, so its buffers land elsewhere, as a profiler's own allocations also move them)
runs, interleaved, `apx analyze --replay --replay-max 3` and ncu's one-pass run (--clock-control
none --cache-control none, the DRAM counters and the duration: replay_check.py's ncu-dram.csv),
then both once more at the first shift (the same layout twice: is a value a property of the
layout?). Per kernel and counter it prints each process's median over apx's one-pass launches
(the same launch ordinals in ncu), and each tool's median over the shifts with its range: the
difference of those medians is the comparison that does not hang on one layout; and a rank
test of whether the two tools' values over the shifts differ by more than the layouts make
them differ. --alone KINDS (e.g. attention,elementwise): at each shift also one process of
each tool per kind of KINDS that measures that kernel alone (apx --kernels, ncu -k), the
others run as the program launched them: does a kernel's count depend on its neighbours being
measured too? REPLAY_FLUSH=1: the same after a flush, `apx analyze --replay --replay-flush`
against ncu --cache-control all (replay_check.py's flush/ comparison, over layouts). Writes
OUT/ (traces, logs, CSVs, spread.json). GPU machine (torch, ncu); about
13 processes of 10 s (and 2 more a shift and kind with --alone). dram_spread.py --table
SPREAD.JSON[,SPREAD.JSON...] prints the tables of an earlier run, or of several pooled (each
file's layouts once) (tests/fixtures/hwc/layout), no GPU needed; with --check PCT it also exits 1
unless each counter's difference of the medians over the layouts is within PCT % or within 0.1 %
of the kernel's DRAM traffic (replay_check.py's tolerance, for the few hundred kB a reading
kernel writes), the apx-versus-ncu comparison on a count that moves with the layout."""
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import known  # noqa: E402  (reading a trace)
import ncu_run  # noqa: E402  (running ncu on replay_workload.py)

DRAM = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
KINDS = ("attention", "gemm", "elementwise", "reduction")
FLUSH = os.environ.get("REPLAY_FLUSH") == "1"   # apx --replay-flush, ncu --cache-control all


USAGE = ("usage: dram_spread.py BUILD OUT [SHIFTS] [--alone KINDS] | --table "
         "SPREAD.JSON[,SPREAD.JSON...] [--check PCT]")


def setup():
    """(build, out, shifts, alone kinds) from the command line; the output folder made"""
    argv, alone = sys.argv[1:], []
    if len(argv) >= 2 and argv[-2] == "--alone":
        alone, argv = argv[-1].split(","), argv[:-2]
        if not alone or any(k not in KINDS for k in alone):
            sys.exit(f"dram_spread.py: --alone takes kinds of {','.join(KINDS)}: "
                     f"{ascii(sys.argv[-1])}")
    if len(argv) not in (2, 3):
        sys.exit(USAGE)
    try:
        shifts = [int(s) for s in (argv[2] if len(argv) == 3 else "0,6,18,42,90").split(",")]
    except ValueError:
        sys.exit(f"dram_spread.py: SHIFTS is a comma-separated list of MiB: {ascii(argv[2])}")
    os.makedirs(argv[1], exist_ok=True)
    return os.path.abspath(argv[0]), os.path.abspath(argv[1]), shifts, alone


def pattern(kind):
    """an extended regex for the kernel names of kind (ncu_run.KINDS)"""
    return "|".join(dict(ncu_run.KINDS)[kind])


def apx_run(tag, alone=None):
    """{kind: ({counter: median over the one-pass launches}, their ordinals)} of one apx run
    (alone: only that kind's kernels replayed and measured)"""
    trace = os.path.join(out, f"apx-{tag}.apx")
    only = ["--kernels", pattern(alone)] if alone else []
    only += ["--replay-flush"] if FLUSH else []
    p = subprocess.run([apx, "analyze", "-f", "-o", trace, "--replay", "--replay-max", "3", *only,
                        "--", sys.executable, ncu_run.WORK], capture_output=True, text=True)
    open(os.path.join(out, f"apx-{tag}.log"), "w").write(p.stdout + p.stderr)
    recs = known.records(dump, trace)
    kern = {r["correlation"]: r for r in recs if r["type"] == "kernel"}
    order = {}
    for c in sorted(kern):
        order.setdefault(kern[c]["name"], []).append(c)
    got = {}
    for c in recs:
        k = kern.get(c.get("correlation")) if c["type"] == "counter" else None
        if k and c.get("passes") == 1 and c["name"] in DRAM and ncu_run.kind_of(k["name"]) in KINDS:
            d = got.setdefault(ncu_run.kind_of(k["name"]), {})
            d.setdefault(c["name"], {})[order[k["name"]].index(c["correlation"])] = c["value"]
    print(f"apx {tag}: exit {p.returncode}, {len(kern)} kernels", flush=True)
    return {kind: ({m: statistics.median(v.values()) for m, v in d.items()},
                   sorted(next(iter(d.values())))) for kind, d in got.items()}


def ncu_run_at(tag, ordinals, alone=None):
    """{kind: {counter: median over the launches numbered ordinals[kind]}} of one ncu run
    (alone: only that kind's kernels profiled)"""
    only = ["-k", "regex:" + pattern(alone)] if alone else []
    rc, rows, _ = ncu_run.run(ncu, "kernel", "all" if FLUSH else "none",
                              DRAM + ["gpu__time_duration.sum"],
                              os.path.join(out, f"ncu-{tag}.csv"), only)
    per, seen = {}, {}
    for d in rows:
        kind = ncu_run.kind_of(d.get("Kernel Name", ""))
        if kind not in KINDS:
            continue
        o = seen[kind] = seen.get(kind, -1) + 1
        for m in DRAM:
            v = ncu_run.value(d, m)
            if v is not None and o in ordinals.get(kind, (3, 4, 5)):
                per.setdefault(kind, {}).setdefault(m, []).append(v)
    print(f"ncu {tag}: exit {rc}, {len(rows)} kernels", flush=True)
    return {kind: {m: statistics.median(v) for m, v in d.items()} for kind, d in per.items()}


def u_test(a, b):
    """(U, p): the pairs (x of a, y of b) with x > y (ties a half), and the two-sided
    probability of a U that far from n m / 2 when a and b come from one distribution: exact
    over every split of the pooled values, or over 20000 random ones where there are more"""
    def u(x, y):
        return sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)
    pool, n, got = a + b, len(a), u(a, b)
    idx = range(len(pool))
    if math.comb(len(pool), n) <= 20000:
        splits = itertools.combinations(idx, n)
    else:
        rng = random.Random(0)
        splits = (rng.sample(idx, n) for _ in range(20000))
    far = []
    for c in splits:
        c = set(c)
        far.append(abs(u([pool[i] for i in c], [pool[i] for i in idx if i not in c]) -
                       n * len(b) / 2))
    return got, sum(f >= abs(got - n * len(b) / 2) for f in far) / len(far)


def table(runs):
    """prints runs ([shift, tool, {kind: {counter: value}}], the order they ran in); returns
    (kind, counter, apx's values, ncu's values) over the layouts"""
    plan = [s for s, t, _ in runs if t == "apx"]
    first = plan[:-1] if len(plan) > 1 and plan[-1] == plan[0] else plan
    print("\nthe one-pass DRAM counters (median over apx's one-pass launches of a process, the "
          f"same launches in ncu), by shift (MiB)"
          f" {first}" + (f" then {plan[0]} again" if len(first) < len(plan) else "") + "; MB")
    print(f"  {'kernel':11s} {'counter':22s} {'tool':4s} " + " ".join(f"{s:>6d}" for s in plan) +
          "   median over shifts [min, max]")
    rows = []
    for kind in KINDS:
        for m in DRAM:
            by = {}
            for tool in ("apx", "ncu"):
                vals = [r.get(kind, {}).get(m) for _, t, r in runs if t == tool]
                if any(v is None for v in vals):
                    print(f"  {kind:11s} {m:22s} {tool}: missing in a run")
                    continue
                by[tool] = vals[:len(first)]
                print(f"  {kind:11s} {m:22s} {tool} " + " ".join(f"{v / 1e6:6.3f}" for v in vals) +
                      f"   {statistics.median(by[tool]) / 1e6:.3f} [{min(by[tool]) / 1e6:.3f}, "
                      f"{max(by[tool]) / 1e6:.3f}]")
            if len(by) == 2:
                rows.append((kind, m, by["apx"], by["ncu"]))
    print(f"\n  {'kernel':11s} {'counter':22s} {'apx':>9s} {'ncu':>9s}  difference of the medians;"
          " U: apx above ncu in U of the n m pairs of shifts, p: exact two-sided")
    for kind, m, a, n in rows:
        am, nm = statistics.median(a), statistics.median(n)
        u, prob = u_test(a, n)
        print(f"  {kind:11s} {m:22s} {am / 1e6:9.3f} {nm / 1e6:9.3f}  "
              f"{100 * (am - nm) / nm:+6.1f} %   U {u:g} of {len(a) * len(n)}, p {prob:.2f}")
    return rows


def agree(rows, pct):
    """PASS/FAIL a line for each counter of rows: the difference of the medians over the
    layouts within pct % of ncu's, or within 0.1 % of the kernel's DRAM traffic (ncu's reads
    and writes); True when every one passes"""
    med = {(kind, m): (statistics.median(a), statistics.median(n)) for kind, m, a, n in rows}
    ok = True
    print(f"\nthe medians over the layouts within {pct:g} % (or 0.1 % of the kernel's DRAM "
          "traffic):")
    for kind, m in itertools.product(KINDS, DRAM):
        if (kind, m) not in med:
            print(f"  FAIL  {kind:11s} {m:22s} not in every run of both tools")
            ok = False
            continue
        am, nm = med[(kind, m)]
        traffic = sum(med.get((kind, x), (0, 0))[1] for x in DRAM)
        good = known.bytes_agree(am, nm, traffic, pct)
        ok = ok and good
        rel = f"{100 * (am - nm) / nm:+6.1f} %" if nm else "  ncu 0"
        share = f", {100 * abs(am - nm) / traffic:.3f} % of its traffic" if traffic else ""
        print(f"  {'PASS' if good else 'FAIL'}  {kind:11s} {m:22s} {rel}  "
              f"({(am - nm) / 1e6:+.3f} MB{share})")
    return ok


def alone_table(runs):
    """prints, for each kind measured alone in runs, its DRAM counters with every kernel
    measured and alone, by tool, over the shifts of the alone runs"""
    for kind in dict.fromkeys(t.split(":")[1] for _, t, _ in runs if ":" in t):
        shifts = [s for s, t, _ in runs if t == "apx:" + kind]
        print(f"\n{kind} measured alone (the other kernels run unmeasured) and with every kernel"
              f" measured, by shift (MiB) {shifts}; MB")
        for m in DRAM:
            by = {}
            for tool in ("apx", "ncu", "apx:" + kind, "ncu:" + kind):
                seen, vals = set(), []
                for s, t, r in runs:        # the first run of each shift
                    if t == tool and s in shifts and s not in seen:
                        seen.add(s)
                        vals.append(r.get(kind, {}).get(m))
                if None in vals or not vals:
                    print(f"  {m:22s} {tool}: missing in a run")
                    continue
                by[tool] = vals
                print(f"  {m:22s} {tool:16s} " + " ".join(f"{v / 1e6:7.3f}" for v in vals) +
                      f"   median {statistics.median(vals) / 1e6:.3f}")
            for a, b in (("apx:" + kind, "ncu:" + kind), ("ncu:" + kind, "ncu"),
                         ("apx:" + kind, "apx"), ("apx", "ncu")):
                if a in by and b in by:
                    am, bm = statistics.median(by[a]), statistics.median(by[b])
                    u, prob = u_test(by[a], by[b])
                    print(f"    {a:16s} against {b:16s} {100 * (am - bm) / bm:+6.1f} %   "
                          f"U {u:g} of {len(by[a]) * len(by[b])}, p {prob:.2f}")


def tool_ok(t):
    return t in ("apx", "ncu") or (t[:4] in ("apx:", "ncu:") and t[4:] in KINDS)


def load(path):
    """the runs of a saved spread.json, or exit saying what is wrong with it"""
    try:
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"dram_spread.py: {ascii(path)}: not a spread.json it can read ({e})")
    if not isinstance(saved, list) or not all(
            isinstance(r, list) and len(r) == 3 and isinstance(r[0], int) and
            isinstance(r[1], str) and tool_ok(r[1]) and isinstance(r[2], dict) for r in saved):
        sys.exit(f"dram_spread.py: {ascii(path)}: not [shift, tool, values] runs")
    return saved


if len(sys.argv) in (3, 5) and sys.argv[1] == "--table":
    files, within = sys.argv[2].split(","), None
    if len(sys.argv) == 5:
        try:
            within = float(sys.argv[4]) if sys.argv[3] == "--check" else None
        except ValueError:
            pass
        if within is None or not 0 < within < 100:
            sys.exit(f"dram_spread.py: --table takes --check PCT (0-100), not "
                     f"{ascii(' '.join(sys.argv[3:]))}")
    if len(files) == 1:
        saved = load(files[0])
    else:       # pooled: each file's layouts once (its repeated first layout left out)
        saved = []
        for path in files:
            seen = set()
            for s, t, r in load(path):
                if (s, t) not in seen:
                    seen.add((s, t))
                    saved.append([s, t, r])
    compared = table(saved)
    alone_table(saved)
    sys.exit(0 if within is None or agree(compared, within) else 1)
build, out, shifts, alone = setup()
apx, dump = os.path.join(build, "apx"), os.path.join(build, "apx-dump")
ncu = ncu_run.find("dram_spread.py")
runs = []                     # (shift, tool, {kind: {counter: value}})
for s, again in [(s, "") for s in shifts] + [(shifts[0], "again")]:
    os.environ["REPLAY_SHIFT_MIB"] = str(s)
    tag = f"{s}{again}"
    a = apx_run(tag)
    runs.append((s, "apx", {k: v for k, (v, _) in a.items()}))
    runs.append((s, "ncu", ncu_run_at(tag, {k: o for k, (_, o) in a.items()})))
    for kind in alone if not again else ():
        a = apx_run(f"{tag}-{kind}", kind)
        runs.append((s, "apx:" + kind, {k: v for k, (v, _) in a.items()}))
        runs.append((s, "ncu:" + kind, ncu_run_at(f"{tag}-{kind}",
                                                  {k: o for k, (_, o) in a.items()}, kind)))
    json.dump(runs, open(os.path.join(out, "spread.json"), "w"), indent=1)
table(runs)
alone_table(runs)
