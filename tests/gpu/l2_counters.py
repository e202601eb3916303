"""l2_counters.py OUT - which one-pass counters give the L2 hit rate ncu reports, on the kernels
of replay_workload.py (GEMM, elementwise, reduction, attention, 12 launches each). The hit rate
lts__t_sector_hit_rate.pct needs 2 passes on GH100, and its parts, the L2 sector lookups that
hit and those that missed, take one pass each but not one together (apx-metrics check --range).
Runs ncu --replay-mode application --cache-control none (each pass a run of the program, in its
own cache state) on the hit rate with the candidate counters, then on each candidate alone (one
pass), and prints per kernel the median over launches 3-5 of each, and the hit rate each
candidate formula gives from the one-pass runs, against ncu's. Writes OUT/l2-*.csv. Runs on
the GPU machine (ncu, torch); about two minutes. Used to choose src_replay.c's one-pass sets."""
import os
import statistics
import subprocess
import sys

import ncu_run

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
ncu = ncu_run.find("l2_counters.py")
RATE = "lts__t_sector_hit_rate.pct"
PARTS = ["lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum", "lts__t_sectors.sum",
         "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
         "lts__t_sectors_srcunit_tex.sum"]


def run(tag, metrics):
    """{kind: {metric: median over launches 3..5}} of one ncu application-replay run"""
    rc, rows, _ = ncu_run.run(ncu, "application", "none", metrics,
                              os.path.join(out, f"l2-{tag}.csv"))
    per, seen = {}, {}
    for d in rows:
        k = ncu_run.kind_of(d.get("Kernel Name", ""))
        if k not in ("attention", "gemm", "reduction", "elementwise"):
            continue
        seen[k] = seen.get(k, 0) + 1
        for m in metrics:
            v = ncu_run.value(d, m)
            if seen[k] >= 4 and v is not None:
                per.setdefault(k, {}).setdefault(m, []).append(v)
    print(f"{tag}: ncu exit {rc}, {len(rows)} kernels", flush=True)
    return {k: {m: statistics.median(v) for m, v in ms.items()} for k, ms in per.items()}


q = subprocess.run([ncu, "--query-metrics-mode", "suffix", "--metrics", RATE, "--chip", "gh100"],
                   capture_output=True, text=True)
print(q.stdout[-1500:])
together = run("together", [RATE] + PARTS)
alone = {m: run(m.split("__")[1].replace(".sum", ""), [m]) for m in PARTS}
rate_alone = run("rate", [RATE])
print(f"\n{'kernel':12s} {'counter':46s} {'with the rate':>14s} {'alone (1 pass)':>15s}")
for k in sorted(together):
    for m in [RATE] + PARTS:
        a = alone.get(m, {}).get(k, {}).get(m) if m != RATE else rate_alone.get(k, {}).get(m)
        print(f"{k:12s} {m:46s} {together[k].get(m, float('nan')):14.6g} "
              f"{a if a is not None else float('nan'):15.6g}")
print(f"\n{'kernel':12s} {'ncu rate':>9s} {'hit/(hit+miss)':>15s} {'hit/sectors':>12s} "
      f"{'tex hit/(h+m)':>14s} {'tex hit/sect':>13s}   (one-pass runs; and with the rate)")
for k in sorted(together):
    def f(src, h, d1, d2=None):
        try:
            hv = src[h][k][h] if src is alone else src[k][h]
            dv = (src[d1][k][d1] if src is alone else src[k][d1]) + \
                ((src[d2][k][d2] if src is alone else src[k][d2]) if d2 else 0)
            return 100 * hv / dv
        except (KeyError, ZeroDivisionError):
            return float("nan")
    hm = ("lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum")
    th = ("lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum")
    for src, what in ((alone, "one-pass"), (together, "together")):
        print(f"{k:12s} {rate_alone.get(k, {}).get(RATE, float('nan')):9.2f} "
              f"{f(src, hm[0], hm[0], hm[1]):15.2f} {f(src, hm[0], 'lts__t_sectors.sum'):12.2f} "
              f"{f(src, th[0], th[0], th[1]):14.2f} "
              f"{f(src, th[0], 'lts__t_sectors_srcunit_tex.sum'):13.2f}   {what}")
