#!/usr/bin/env python3
"""step_drift.py BLOCKS... - how much a timed program drifts on its own (an A/A test for
tests/gpu/daemon_verify.sh, on blocks files written by daemon_train.py --blocks, at least
~25 s of them): the blocks are cut into 3 s windows regardless of nvperfd, and each window's
median block is divided by the mean of its neighbours' medians, as a "with" window is compared
with the "without" windows around it. On a run timed without nvperfd this is the check's
noise alone; on an overhead run's blocks it mixes both states. Prints, per file, the spread of
these ratios (median absolute deviation from 1 and the 5..95 % range); the last line names the
steadiest file."""
import statistics
import sys

WINDOW_S = 3.0
WARMUP_S = 3.0


def pseudo_ratios(path):
    blk = [tuple(map(float, ln.split())) for ln in open(path) if len(ln.split()) == 2]
    if len(blk) < 20:
        return []
    t0 = blk[0][0] + WARMUP_S
    wins = {}
    for end, ms in blk:
        if end >= t0:
            wins.setdefault(int((end - t0) // WINDOW_S), []).append(ms)
    meds = [statistics.median(wins[k]) for k in sorted(wins) if len(wins[k]) >= 3]
    return [meds[i] / ((meds[i - 1] + meds[i + 1]) / 2) for i in range(1, len(meds) - 1, 2)]


best = None
for path in sys.argv[1:]:
    r = sorted(pseudo_ratios(path))
    if len(r) < 3:
        print(f"{path}: too few 3 s windows (3 comparisons need 7, of 3 blocks each)")
        continue
    mad = statistics.median(abs(x - 1) for x in r)
    lo, hi = r[int(0.05 * (len(r) - 1))], r[int(0.95 * (len(r) - 1))]
    print(f"{path}: {len(r)} pseudo-cycles, median |ratio - 1| {mad * 100:.2f} %, "
          f"5..95 % {lo:.4f}..{hi:.4f}")
    if best is None or mad < best[0]:
        best = (mad, path)
if best:
    print(f"steadiest: {best[1]}")
