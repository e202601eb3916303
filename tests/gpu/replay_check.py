"""replay_check.py BUILD OUT - `apx analyze --replay` (kernel replay with CUPTI's range profiler,
issue 13 item 2) against Nsight Compute on the same GPU: runs replay_workload.py (a GEMM, an
elementwise kernel, a reduction, an attention kernel, 6 launches each) once under
`apx analyze --replay --replay-max 3` and once under `ncu --clock-control none --cache-control
none --csv --page raw` (no cache flush: apx replays in the cache state the program leaves)
with the same metric names, and compares per kernel the medians of the launches: within 5 %
(or 1 point for percentages near 0). Also checks: every replayed launch's counters join a
kernel record by correlation id; the first 3 launches of each kernel replayed, then
the launches numbered 6, 12, 24, ... (src_replay.c); kv `replay`
says what it cost; the program's exit status is kept. Prints a table last; exit 1 on a FAIL.

replay_check.py BUILD --from DIR: the same checks on DIR/replay.apx, replay.log and ncu.csv of an
earlier GPU run, no GPU needed (ctest hwc_replay_check on tests/fixtures/hwc); the comparisons
listed in DIR/known-differences.txt (id `replay.KIND.METRIC`) print KNOWN (tests/gpu/known.py)."""
import csv
import glob
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import known  # noqa: E402  (tests/gpu/known.py: --from DIR and the known differences)

S = known.Setup(sys.argv, replay=True)
build, offline, out, apx, dump, check = S.build, S.offline, S.out, S.apx, S.dump, S.check
# REPLAY_FLUSH=1: apx with --replay-flush against ncu flushing the caches before each pass
# (--cache-control all), the other like-for-like pairing: after each replayed launch the next
# launch of the kernel is measured in one pass after apx's L2 sweep (src_replay.c), and its
# counters (FLUSHED below) are the ones compared; the other counters are the first run's
FLUSH = os.environ.get("REPLAY_FLUSH") == "1"
FLUSHED = ["dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
           "dram__bytes_write.sum"]   # pm_sets.c's replay-flush set (one pass)
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(here, "replay_workload.py")
COMPARE = ["gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "l1tex__t_sector_hit_rate.pct",
           "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio"]
# what each kernel of the workload is, for the table (matched on the symbol name)
KINDS = (("attention", ("sdpa", "flash", "fmha", "attention")), ("gemm", ("nvjet", "gemm", "xmma", "cutlass")),
         ("reduction", ("reduce_kernel",)), ("elementwise", ("vectorized_elementwise",)),
         ("randn", ("distribution",)))
RP_EXTRA = 8     # src_replay.c: after the first N, launches 2N, 4N, 8N, ..., up to 8 more


def kind_of(name):
    low = name.lower()
    for k, keys in KINDS:
        if any(s in low for s in keys):
            return k
    return None


def chosen(launches, n):
    """(replayed, flushed): the launches (from 0) src_replay.c replays, the first n, then those
    numbered (from 1) 2n, 4n, 8n, ..., at most RP_EXTRA more; with --replay-flush, the launch
    after each replayed one is measured flushed instead and is not counted in that numbering"""
    replayed, flushed, due, k = [], [], False, 0
    for i in range(launches):
        if FLUSH and due:
            flushed.append(i)
            due = False
            continue
        if k < n or (len(replayed) < n + RP_EXTRA and (k + 1) % n == 0 and
                     (k + 1) // n >= 2 and not ((k + 1) // n) & ((k + 1) // n - 1)):
            replayed.append(i)
            due = True
        k += 1
    return replayed, flushed


trace = os.path.join(out, "replay.apx")
if offline:
    p = known.logged_run(os.path.join(out, "replay.log"))
else:
    p = subprocess.run([apx, "analyze", "-f", "-o", trace, "--replay", "--replay-max", "3"] +
                       (["--replay-flush"] if FLUSH else []) + ["--", sys.executable, work],
                       capture_output=True, text=True)
    open(os.path.join(out, "replay.log"), "w").write(p.stdout + p.stderr)
check(p.returncode == 0 and "done" in p.stdout, f"apx analyze --replay exit {p.returncode}", "replay.exit")
recs = [json.loads(l) for l in subprocess.run([dump, trace], capture_output=True,
                                              text=True).stdout.splitlines() if l.startswith("{")]
kern = {r["correlation"]: r for r in recs if r["type"] == "kernel"}
ctr = [r for r in recs if r["type"] == "counter"]
kv = [r.get("value") for r in recs if r["type"] == "kv" and r.get("key") in ("replay", "degraded")]
print("kv:", kv)
check(any(v and re.match(r"\d+ launches of \d+ kernels replayed .*; 0 failed", v) for v in kv),
      "kv replay says what was replayed and what it cost", "replay.kv")
check(re.search(r"^apx: replayed: \d+ launches of \d+ kernels replayed", p.stderr, re.M),
      "apx analyze's summary says what was replayed and what it cost", "replay.summary_line")
check(ctr and all(c["correlation"] in kern for c in ctr),
      f"{len(ctr)} counters, all joined to kernel records by correlation id", "replay.joined")
untimed = [k for k in kern.values() if k["start_ns"] == 0 and k["end_ns"] == 0]
ctr_corr = {c["correlation"] for c in ctr}
one = {c["correlation"] for c in ctr if c.get("passes") == 1}   # --replay-flush's launches
multi = ctr_corr - one
check(untimed and multi <= {k["correlation"] for k in untimed} <= ctr_corr,
      f"{len(untimed)} kernel records without times: the {len(multi)} replayed launches and "
      f"{len(untimed) - len(multi)} of the {len(one)} flushed ones", "replay.untimed")
order = {}               # kernel name -> correlation ids in launch order
for k in sorted(kern.values(), key=lambda r: r["correlation"]):   # replayed ones carry no times
    order.setdefault(k["name"], []).append(k["correlation"])
apx_vals = {}            # (name, ordinal) -> metric -> value
measured = {}            # name -> (replayed ordinals, flushed ordinals)
for c in ctr:
    k = kern.get(c["correlation"])
    if k:
        ordinal = order[k["name"]].index(c["correlation"])
        got = measured.setdefault(k["name"], (set(), set()))
        got[c["correlation"] in one].add(ordinal)
        if not FLUSH or (c["correlation"] in one and c["name"] in FLUSHED):
            apx_vals.setdefault((k["name"], ordinal), {})[c["name"]] = c["value"]
replayed = {n: sorted(a | b) for n, (a, b) in measured.items()}
bad = [n for n, (a, b) in measured.items()
       if (sorted(a), sorted(b)) != chosen(len(order[n]), 3)]
for n in bad:
    print(f"  {kind_of(n)}: replayed {sorted(measured[n][0])}, flushed {sorted(measured[n][1])} "
          f"of {len(order[n])}, expected {chosen(len(order[n]), 3)}")
check(replayed and not bad, "replayed launches per kernel: " + ", ".join(
    f"{kind_of(n)} {len(o)} of {len(order[n])}" for n, o in sorted(replayed.items())) +
    " (the first 3, then 2N, 4N, ..." + ("; each followed by a flushed one)" if FLUSH else ")"),
    "replay.chosen")
if FLUSH:
    check(any(v and re.search(r"DRAM counters from [1-9]\d* launches after an L2 sweep", v)
              for v in kv), "kv replay counts the flushed launches", "replay.flushed_kv")
kinds = {kind_of(n) for n in replayed}
check({"gemm", "elementwise", "reduction", "attention"} <= kinds, f"kernel kinds replayed: {sorted(kinds, key=str)}",
      "replay.kinds")

ncu = None if offline else shutil.which("ncu") or (sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) or
                                                    [None])[-1]
ncu_vals = {}
if not ncu and not offline:
    check(False, "ncu not found", "replay.ncu")
else:
    if offline:
        q = known.LoggedRun(os.path.join(out, "ncu.csv"))
        q.returncode = 0
    else:
        q = subprocess.run([ncu, "--clock-control", "none", "--cache-control", "all" if FLUSH else "none",
                            "--csv", "--page",
                            "raw", "--print-kernel-base", "mangled", "--metrics", ",".join(COMPARE),
                            sys.executable, work], capture_output=True, text=True)
        open(os.path.join(out, "ncu.csv"), "w").write(q.stdout)
    lines = [l for l in q.stdout.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    check(q.returncode == 0 and len(rows) > 2, f"ncu exit {q.returncode}, {len(rows) - 2} kernels", "replay.ncu")
    if len(rows) > 2:
        head = rows[0]
        seen = {}
        for row in rows[2:]:
            d = dict(zip(head, row))
            name = d.get("Kernel Name", "")
            ordinal = seen.get(name, 0)
            seen[name] = ordinal + 1
            for m in COMPARE:
                try:
                    ncu_vals.setdefault((name, ordinal), {})[m] = float(d[m].replace(",", ""))
                except (KeyError, ValueError):
                    continue

print(f"\nreplay vs ncu --clock-control none --cache-control {'all' if FLUSH else 'none'} (medians "
      f"over the same launches{'; the flushed launches: ' + ', '.join(FLUSHED) if FLUSH else ''}):")
print(f"  {'kernel':11s} {'metric':62s} {'apx':>14s} {'ncu':>14s} {'diff':>7s}")
for name in sorted(replayed, key=lambda n: str(kind_of(n))):
    for m in (FLUSHED if FLUSH else COMPARE):
        pairs = [(apx_vals.get((name, o), {}).get(m), ncu_vals.get((name, o), {}).get(m))
                 for o in replayed[name]]
        pairs = [(a, n) for a, n in pairs if a is not None and n is not None]
        if not pairs:
            continue
        am, nm = statistics.median(a for a, _ in pairs), statistics.median(n for _, n in pairs)
        rel = abs(am - nm) / abs(nm) if nm else abs(am)
        ok = rel <= 0.05 or (("pct" in m or "rate" in m) and abs(am - nm) <= 1.0)
        kid = f"{kind_of(name)}{'' if kind_of(name) != 'randn' else len(order[name])}"
        check(ok, f"  {kid:11s} {m:62s} {am:14.4g} {nm:14.4g} {rel * 100:6.1f}%", f"replay.{kid}.{m}")
sys.exit(check.finish())
