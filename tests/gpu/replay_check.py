"""replay_check.py BUILD OUT - `apx analyze --replay` (kernel replay with CUPTI's range profiler)
against Nsight Compute on the same GPU: runs replay_workload.py (a GEMM, an
elementwise kernel, a reduction, an attention kernel, 12 launches each) once under `apx analyze
--replay --replay-max 3` and under `ncu --clock-control none --cache-control none --csv --page
raw` (no cache flush: apx replays in the cache state the program leaves) with the same metric
names, and compares per kernel the medians of the launches: within 5 % (or 1 point for
percentages near 0; DRAM bytes: or within 0.1 % of the kernel's DRAM traffic, for the few kB a
reduction writes). The DRAM counters: apx measures them in one pass on the next launch of each
replayed kernel and shape right after a plain launch (src_replay.c), and ncu in a run of its own
with just those and the duration (ncu-dram.csv: one pass, so nothing saved or restored either;
ncu with all the metrics needs 12 passes, whose restores of memory change DRAM writes: with
--cache-control none the reduction's 4.49 MB against 25.97 MB in one pass and 26.01 MB in
application replay on the H200, ncu_modes.py). The L2 hit rate, which needs 2 passes on GH100,
against ncu's application replay (ncu-app.csv: each pass in the program's cache state, nothing
saved or restored). Also checks: every replayed launch's counters join a kernel record by
correlation id; the first 3 launches of each kernel replayed, then the launches numbered 6, 12,
24, ..., each followed by one-pass ones (src_replay.c; without --replay-flush only launches
right after a plain one, of any kernel: after a replayed one a launch starts in the L2 state
the replay's restores left, after a one-pass one it wrote more); kv `replay` says what it
cost; the program's exit status is kept. Prints a table last; exit 1 on a FAIL.

replay_check.py BUILD --from DIR: the same checks on DIR/replay.apx, replay.log, ncu.csv,
ncu-dram.csv and ncu-app.csv of an earlier GPU run (a trace from before the one-pass launches of
plain --replay, without ncu-dram.csv: its DRAM counters against ncu.csv's), no GPU needed (ctest
hwc_replay_check on tests/fixtures/hwc); the comparisons listed in DIR/known-differences.txt (id
`replay.KIND.METRIC`) print KNOWN (tests/gpu/known.py)."""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import known  # noqa: E402  (tests/gpu/known.py: --from DIR and the known differences)
import ncu_run  # noqa: E402  (running ncu on the workload, reading its CSV)

S = known.Setup(sys.argv, replay=True)
build, offline, out, apx, dump, check = S.build, S.offline, S.out, S.apx, S.dump, S.check
# REPLAY_FLUSH=1: apx with --replay-flush against ncu flushing the caches before each pass
# (--cache-control all), the other like-for-like pairing: the one-pass launches are measured
# after apx's L2 sweep (src_replay.c), and only their counters (DRAM below) are compared; the
# other counters are the first run's
FLUSH = os.environ.get("REPLAY_FLUSH") == "1"
DRAM = ["dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
        "dram__bytes_write.sum"]   # pm_sets.c's replay-one-pass set (one pass)
# ncu's one-pass run: those and the duration (one pass too: what the kernel takes in the
# program, with no restore before it; ncu's 12-pass run times the reduction at 68.9 us, its
# one-pass and application-replay runs at 74 us, as apx's replay: ncu_modes.py)
ONE_PASS_REF = DRAM + ["gpu__time_duration.sum"]
# ncu's application replay (the program run again for each pass, nothing saved or restored,
# every pass in the program's cache state) for the L2 hit rate, which depends on what the
# kernels before left in L2 and needs 2 passes on GH100: ncu's kernel replay measures it after
# its own restores of memory, as apx's replay does after CUPTI's (ncu-app.csv)
L2 = "lts__t_sector_hit_rate.pct"
APP_REF = [L2]
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(here, "replay_workload.py")
COMPARE = ["gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "l1tex__t_sector_hit_rate.pct",
           "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio"]
RP_EXTRA = 8     # src_replay.c: after the first N, launches 2N, 4N, 8N, ..., up to 8 more


kind_of = ncu_run.kind_of   # what each kernel of the workload is (its symbol name)


def chosen(seq, n, one_pass, after_rule, after_one_pass):
    """name -> (replayed, one-pass): the ordinals (from 0, per kernel name) of the launches of
    seq (kernel names in launch order) that src_replay.c replays, the first n of each kernel,
    then those numbered (from 1) 2n, 4n, 8n, ..., at most RP_EXTRA more; the next one_pass
    launches of a replayed kernel (kv replay_one_pass: 3 now, 1 in traces from before it, 0
    without one-pass launches) are measured in one pass instead and are not counted in that
    numbering; with after_rule (plain --replay), not a launch right after a replayed one (of
    any kernel), and with after_one_pass (kv replay_one_pass_after plain-launch) not one right
    after a one-pass one either: that one runs as any other, and the one-pass launches wait"""
    st, after = {}, False
    for name in seq:
        if name.startswith("apx_l2_sweep"):     # apx's own L2 sweep (--replay-flush)
            continue
        s = st.setdefault(name, {"k": 0, "ord": 0, "due": 0, "rep": [], "one": []})
        o = s["ord"]
        s["ord"] += 1
        if s["due"] and not (after_rule and after):
            s["one"].append(o)
            s["due"], after = s["due"] - 1, after_one_pass
            continue
        k = s["k"]
        s["k"] += 1
        if k < n or (len(s["rep"]) < n + RP_EXTRA and (k + 1) % n == 0 and
                     (k + 1) // n >= 2 and not ((k + 1) // n) & ((k + 1) // n - 1)):
            s["rep"].append(o)
            s["due"], after = one_pass, True
        else:
            after = False
    return {name: (s["rep"], s["one"]) for name, s in st.items()}


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
kvs = {r.get("key"): r.get("value") for r in recs if r["type"] == "kv"}
print("kv:", kv)
check(any(v and re.match(r"\d+ launches of \d+ kernels replayed .*; 0 failed", v) for v in kv),
      "kv replay says what was replayed and what it cost", "replay.kv")
check(re.search(r"^apx: replayed: \d+ launches of \d+ kernels replayed", p.stderr, re.M),
      "apx analyze's summary says what was replayed and what it cost", "replay.summary_line")
check(ctr and all(c["correlation"] in kern for c in ctr),
      f"{len(ctr)} counters, all joined to kernel records by correlation id", "replay.joined")
untimed = [k for k in kern.values() if k["start_ns"] == 0 and k["end_ns"] == 0]
ctr_corr = {c["correlation"] for c in ctr}
one = {c["correlation"] for c in ctr if c.get("passes") == 1}   # the one-pass launches
ONE_PASS = FLUSH or bool(one)   # a trace from before plain --replay's one-pass launches: False
# the L2 hit rate in the program's cache state (view_counters.c): each one-pass launch's L2
# sector hits over the lookups (hits and misses) of the replayed launch before it, of the same
# kernel; absent from a trace from before the one-pass hits
HIT, MISS = "lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum"
l2_rate = {}             # name -> the one-pass launches' hit rates
per_launch, lookups = {}, {}
for c in ctr:
    if c["correlation"] in kern and c["name"] in (HIT, MISS):
        per_launch.setdefault(c["correlation"], {})[c["name"]] = c["value"]
for corr in sorted(per_launch):
    d, name = per_launch[corr], kern[corr]["name"]
    if corr not in one:
        lookups[name] = d[HIT] + d[MISS] if len(d) == 2 else 0
    elif HIT in d and lookups.get(name):
        l2_rate.setdefault(name, []).append(min(100.0, 100 * d[HIT] / lookups[name]))
multi = ctr_corr - one
check(untimed and multi <= {k["correlation"] for k in untimed} <= ctr_corr,
      f"{len(untimed)} kernel records without times: the {len(multi)} replayed launches and "
      f"{len(untimed) - len(multi)} of the {len(one)} one-pass ones", "replay.untimed")
order = {}               # kernel name -> correlation ids in launch order
for k in sorted(kern.values(), key=lambda r: r["correlation"]):   # replayed ones carry no times
    order.setdefault(k["name"], []).append(k["correlation"])
apx_vals = {}            # (name, ordinal) -> metric -> value
measured = {}            # name -> (replayed ordinals, one-pass ordinals)
for c in ctr:
    k = kern.get(c["correlation"])
    if k:
        ordinal = order[k["name"]].index(c["correlation"])
        got = measured.setdefault(k["name"], (set(), set()))
        got[c["correlation"] in one].add(ordinal)
        # the DRAM counters of the one-pass launches, the others of the replayed ones (with
        # --replay-flush, only the one-pass launches' are compared; an old trace: all)
        if not one or (c["correlation"] in one) == (c["name"] in DRAM):
            apx_vals.setdefault((k["name"], ordinal), {})[c["name"]] = c["value"]
replayed = {n: sorted(a | b) for n, (a, b) in measured.items()}
AFTER_RULE = not FLUSH   # in the program's cache state, no one-pass launch right after a replay
AFTER_ONE = kvs.get("replay_one_pass_after") == "plain-launch"   # nor after a one-pass one
expected = chosen([k["name"] for k in sorted(kern.values(), key=lambda r: r["correlation"])],
                  3, (int(kvs.get("replay_one_pass", 1)) if ONE_PASS else 0), AFTER_RULE,
                  AFTER_ONE)
bad = [n for n, (a, b) in measured.items() if (sorted(a), sorted(b)) != expected.get(n)]
for n in bad:
    print(f"  {kind_of(n)}: replayed {sorted(measured[n][0])}, one-pass {sorted(measured[n][1])} "
          f"of {len(order[n])}, expected {expected.get(n)}")
check(replayed and not bad, "replayed launches per kernel: " + ", ".join(
    f"{kind_of(n)} {len(o)} of {len(order[n])}" for n, o in sorted(replayed.items())) +
    " (the first 3, then 2N, 4N, ..." + (f"; each followed by up to "
                                        f"{kvs.get('replay_one_pass', 1)} one-pass one(s)" +
                                        (", only right after a plain launch)" if AFTER_ONE
                                         else ", not right after a replay)" if AFTER_RULE
                                         else ")")
                                        if ONE_PASS else ")"),
    "replay.chosen")
where = "after an L2 sweep" if FLUSH else "in the program's cache state"
if ONE_PASS:
    check(any(v and re.search(r"DRAM counters (and L2 sector hits )?from [1-9]\d* "
                              r"launches (measured in one pass )?" + where, v) for v in kv),
          f"kv replay counts the one-pass launches ({where})", "replay.flushed_kv")
kinds = {kind_of(n) for n in replayed}
check({"gemm", "elementwise", "reduction", "attention"} <= kinds, f"kernel kinds replayed: {sorted(kinds, key=str)}",
      "replay.kinds")

ncu = None if offline else ncu_run.locate()


def ncu_values(metrics, cache, name, cid, mode="kernel"):
    """ncu's values of metrics per (kernel, launch ordinal): a run now (--replay-mode mode),
    written to OUT/name, or DIR/name offline (None when that file is not there)"""
    path = os.path.join(out, name)
    if offline:
        if not os.path.exists(path):
            return None
        rc, rows = 0, ncu_run.rows(open(path, encoding="utf-8", errors="replace").read())
    else:
        rc, rows, _ = ncu_run.run(ncu, mode, cache, metrics, path,
                                  ["--print-kernel-base", "mangled"])
    check(rc == 0 and rows, f"ncu ({name}) exit {rc}, {len(rows)} kernels", cid)
    vals, seen = {}, {}
    for d in rows:
        name = d.get("Kernel Name", "")
        ordinal = seen.get(name, 0)
        seen[name] = ordinal + 1
        for m in metrics:
            try:
                vals.setdefault((name, ordinal), {})[m] = float(d[m].replace(",", ""))
            except (KeyError, ValueError):
                continue
    return vals


cache = "all" if FLUSH else "none"
ncu_vals, dram_vals, app_vals = {}, None, None
if not ncu and not offline:
    check(False, "ncu not found", "replay.ncu")
else:
    # with --replay-flush only the DRAM counters are compared: ncu's one-pass run alone (an
    # old fixture has ncu.csv with every metric instead)
    if not FLUSH or offline:
        ncu_vals = ncu_values(COMPARE, cache, "ncu.csv", "replay.ncu") or {}
    if ONE_PASS:
        dram_vals = ncu_values(ONE_PASS_REF, cache, "ncu-dram.csv", "replay.ncu_dram")
    if not FLUSH:
        app_vals = ncu_values(APP_REF, cache, "ncu-app.csv", "replay.ncu_app", "application")

print(f"\nreplay vs ncu --clock-control none --cache-control {cache} (medians over the same "
      f"launches; {', '.join(DRAM)}: apx's one-pass launches {where if ONE_PASS else '(none)'}"
      f"{' against ncu with just those and the duration, one pass' if dram_vals else ''}"
      f"{'; the L2 hit rate against ncu --replay-mode application' if app_vals else ''}):")
print(f"  {'kernel':11s} {'metric':62s} {'apx':>14s} {'ncu':>14s} {'diff':>7s}")
for name in sorted(replayed, key=lambda n: str(kind_of(n))):
    ref = lambda m: (dram_vals if dram_vals and m in ONE_PASS_REF else   # noqa: E731
                     app_vals if app_vals and m in APP_REF else ncu_vals)
    kid = f"{kind_of(name)}{'' if kind_of(name) != 'randn' else len(order[name])}"
    if one and not measured[name][1]:
        print(f"  {kid}: no one-pass launch (launched {len(order[name])} time(s)): its DRAM "
              "counters are the replay's (inflated writes), not compared")
    for m in (DRAM if FLUSH else COMPARE):
        got = [o for o in replayed[name] if m in apx_vals.get((name, o), {}) and
               m in ref(m).get((name, o), {})]
        if m == L2 and l2_rate.get(name) and app_vals:
            # the one-pass launches' hit rates, against ncu's application replay of them
            got = [o for o in measured[name][1] if m in app_vals.get((name, o), {})]
            if not got:
                continue
            am = statistics.median(l2_rate[name])
            nm = statistics.median(app_vals[(name, o)][m] for o in got)
            own = [apx_vals[(name, o)][m] for o in replayed[name]
                   if m in apx_vals.get((name, o), {})]
            if own:
                print(f"  {kid:11s} {'(its replayed launches: ' + m + ')':62s} "
                      f"{statistics.median(own):14.4g}")
            m = L2 + " (one pass)"
        elif not got:
            continue
        else:
            am = statistics.median(apx_vals[(name, o)][m] for o in got)
            nm = statistics.median(ref(m)[(name, o)][m] for o in got)
        # the kernel's DRAM traffic over the same launches (ncu's): what a few kB are held to
        traffic = statistics.median(sum(ref(x).get((name, o), {}).get(x, 0) for x in DRAM[1:])
                                    for o in got)
        rel = abs(am - nm) / abs(nm) if nm else abs(am)
        # (a stall ratio: or within 0.05 cycles an instruction, where no stall is a cause: ncu
        # prints 0.11 for the randn kernel's long-scoreboard stall, apx measured 0.117-0.121)
        ok = rel <= 0.05 or (("pct" in m or "rate" in m) and abs(am - nm) <= 1.0) or \
            (m.endswith(".ratio") and abs(am - nm) <= 0.05) or \
            ("bytes" in m and known.bytes_agree(am, nm, traffic))
        check(ok, f"  {kid:11s} {m:62s} {am:14.4g} {nm:14.4g} {rel * 100:6.1f}%",
              f"replay.{kid}.{m.split()[0]}")
sys.exit(check.finish())
