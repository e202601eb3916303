"""l2_counters.py OUT - which one-pass counters give the L2 hit rate ncu reports, on the kernels
of replay_workload.py (GEMM, elementwise, reduction, attention, 6 launches each). The hit rate
lts__t_sector_hit_rate.pct needs 2 passes on GH100, and its parts, the L2 sector lookups that
hit and those that missed, take one pass each but not one together (apx-metrics check --range).
Runs ncu --replay-mode application --cache-control none (each pass a run of the program, in its
own cache state) on the hit rate with the candidate counters, then on each candidate alone (one
pass), and prints per kernel the median over launches 3-5 of each, and the hit rate each
candidate formula gives from the one-pass runs, against ncu's. Writes OUT/l2-*.csv. Runs on
the GPU machine (ncu, torch); about two minutes. Used to choose src_replay.c's one-pass sets."""
import csv
import glob
import io
import os
import shutil
import statistics
import subprocess
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(here, "replay_workload.py")
ncu = shutil.which("ncu") or (sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) or [None])[-1]
if not ncu:
    sys.exit("l2_counters.py: ncu not found")
RATE = "lts__t_sector_hit_rate.pct"
PARTS = ["lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum", "lts__t_sectors.sum",
         "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
         "lts__t_sectors_srcunit_tex.sum"]
KINDS = (("attention", ("sdpa", "flash", "fmha", "attention")), ("gemm", ("nvjet", "gemm")),
         ("reduction", ("reduce_kernel",)), ("elementwise", ("vectorized_elementwise",)))


def kind_of(name):
    low = name.lower()
    return next((k for k, keys in KINDS if any(s in low for s in keys)), None)


def run(tag, metrics):
    """{kind: {metric: median over launches 3..5}} of one ncu application-replay run"""
    q = subprocess.run([ncu, "--replay-mode", "application", "--clock-control", "none",
                        "--cache-control", "none", "--csv", "--page", "raw", "--metrics",
                        ",".join(metrics), sys.executable, work], capture_output=True, text=True)
    open(os.path.join(out, f"l2-{tag}.csv"), "w").write(q.stdout + q.stderr[-2000:])
    lines = [l for l in q.stdout.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    per, seen = {}, {}
    for row in rows[2:]:
        d = dict(zip(rows[0], row))
        k = kind_of(d.get("Kernel Name", ""))
        if not k:
            continue
        seen[k] = seen.get(k, 0) + 1
        if seen[k] < 4:
            continue
        for m in metrics:
            try:
                per.setdefault(k, {}).setdefault(m, []).append(float(d[m].replace(",", "")))
            except (KeyError, ValueError):
                pass
    print(f"{tag}: ncu exit {q.returncode}, {len(rows) - 2} kernels", flush=True)
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
