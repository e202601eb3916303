"""nvml_stall.py BUILD TRACE.apx [TRACE.apx ...] - do the program's kernels start late right
after the collector's NVML readings (src_nvml.c, every 50 ms on a thread of its own)? For each
reading of a trace, the longest gap between consecutive kernels in the 2 ms after it, against
the same 25 ms later (half-way to the next reading: the control). A reading that held up the
program's launches would show as longer gaps after readings than in the control. Reads the
traces run.py --keep leaves (e.g. tiny_light.apx); no GPU needed. Prints one line a trace."""
import bisect
import json
import os
import statistics
import subprocess
import sys

WINDOW_NS, CONTROL_NS = 2_000_000, 25_000_000


def records(dump, trace):
    p = subprocess.run([dump, trace], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"nvml_stall.py: apx-dump could not read {ascii(trace)}: "
                 f"{ascii(p.stderr.strip()[:200])}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def longest_gaps(starts, gaps, times, offset):
    """the longest kernel-to-kernel gap starting in [t + offset, t + offset + WINDOW_NS)"""
    out = []
    for t in times:
        i = bisect.bisect_left(starts, t + offset)
        j = bisect.bisect_left(starts, t + offset + WINDOW_NS)
        seg = gaps[i:min(j, len(gaps))]
        if seg:
            out.append(max(seg))
    return out


if len(sys.argv) < 3:
    sys.exit("usage: nvml_stall.py BUILD TRACE.apx [TRACE.apx ...]")
dump = os.path.join(os.path.abspath(sys.argv[1]), "apx-dump")
for trace in sys.argv[2:]:
    recs = records(dump, trace)
    k = sorted((r["start_ns"], r["end_ns"]) for r in recs if r["type"] == "kernel" and
               r.get("start_ns"))
    times = sorted({r["end_ns"] for r in recs if r["type"] == "metric" and
                    r["name"].startswith("nvml.")})
    name = ascii(os.path.basename(trace))
    if len(k) < 2 or not times:
        print(f"{name}: {len(k)} kernels, {len(times)} NVML readings: nothing to compare")
        continue
    starts = [s for s, _ in k[1:]]
    gaps = [k[i + 1][0] - k[i][1] for i in range(len(k) - 1)]   # gap before starts[i]
    after = longest_gaps(starts, gaps, times, 0)
    ctrl = longest_gaps(starts, gaps, times, CONTROL_NS)
    if not after or not ctrl:
        print(f"{name}: no kernels near the {len(times)} NVML readings")
        continue
    print(f"{name}: {len(times)} NVML readings, {len(k)} kernels; longest gap in the 2 ms after a "
          f"reading: median {statistics.median(after) / 1e3:.1f} us (max "
          f"{max(after) / 1e3:.1f}), 25 ms later: {statistics.median(ctrl) / 1e3:.1f} us (max "
          f"{max(ctrl) / 1e3:.1f})")
