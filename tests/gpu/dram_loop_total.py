"""dram_loop_total.py OUT [SHIFTS] - ncu's own count of the DRAM bytes one loop iteration of
replay_workload.py writes, in profiler ranges rather than kernel windows (do
the per-kernel windows of either tool add up to what an iteration writes, and how do ncu's
ranges around single kernels split the writes between them?).

For each shift N of SHIFTS (MiB, default 0,8,16) runs ncu --replay-mode app-range
--cache-control none --clock-control none (profiler ranges, replayed by running the program
again for each pass: here one pass; --replay-mode range stops at the workload's
cuKernelSetAttribute, "Unsupported API during capture") twice: with REPLAY_RANGE=loop
(iterations 3-5 of the loop each in one cudaProfilerStart/Stop range: everything the iteration
writes, gaps between kernels included) and REPLAY_RANGE=kernel (each kernel of those
iterations in a range of its own: a range's window around one kernel, as apx's range profiler
has it). Prints per shift the loop's writes and the kernel ranges' writes per kernel (median
of the 3 iterations), and writes OUT/loop-total.json and ncu's CSVs. GPU machine (torch, ncu);
about 6 processes of 15 s."""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_run  # noqa: E402  (running ncu on replay_workload.py)

DRAM = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
ORDER = ("gemm", "elementwise", "reduction", "attention")   # the loop's kernels, in order
# the bytes one iteration stores: GEMM 4096x4096 bf16, y 64 Mi fp32, attention 8x16x1024x64 bf16
DIRTIED = 4096 * 4096 * 2 + (64 << 20) * 4 + 8 * 16 * 1024 * 64 * 2


def ranges(ncu, shift, mode):
    """the write bytes of each range ncu reports, in order, or exit with ncu's message"""
    os.environ.update(REPLAY_SHIFT_MIB=str(shift), REPLAY_RANGE=mode)
    rc, rows, err = ncu_run.run(ncu, "app-range", "none", DRAM,
                                os.path.join(out, f"ncu-{mode}-{shift}.csv"))
    got = [ncu_run.value(r, "dram__bytes_write.sum") for r in rows]
    if rc or not got or None in got:
        csv = open(os.path.join(out, f"ncu-{mode}-{shift}.csv")).read()
        sys.exit(f"dram_loop_total.py: ncu range run ({mode}, shift {shift}) exit {rc}, "
                 f"{len(got)} ranges: {ascii((err + csv).strip()[-600:])}")
    return got


if len(sys.argv) not in (2, 3):
    sys.exit("usage: dram_loop_total.py OUT [SHIFTS]")
out = os.path.abspath(sys.argv[1])
os.makedirs(out, exist_ok=True)
try:
    shifts = [int(s) for s in (sys.argv[2] if len(sys.argv) == 3 else "0,8,16").split(",")]
except ValueError:
    sys.exit(f"dram_loop_total.py: SHIFTS is a comma-separated list of MiB: {ascii(sys.argv[2])}")
ncu = ncu_run.find("dram_loop_total.py")
result = []
for shift in shifts:
    loop = ranges(ncu, shift, "loop")
    kern = ranges(ncu, shift, "kernel")
    per = {k: statistics.median(kern[i::len(ORDER)]) for i, k in enumerate(ORDER)}
    result.append({"shift": shift, "loop": loop, "kernel": kern, "per_kernel": per})
    print(f"shift {shift:3d} MiB: loop ranges {[round(v / 1e6, 3) for v in loop]} MB; kernel "
          f"ranges {', '.join(f'{k} {v / 1e6:.3f}' for k, v in per.items())} MB, sum "
          f"{sum(per.values()) / 1e6:.3f} MB", flush=True)
json.dump(result, open(os.path.join(out, "loop-total.json"), "w"), indent=1)
print(f"\nbytes one iteration stores: {DIRTIED / 1e6:.3f} MB")
loops = statistics.median(v for r in result for v in r["loop"])
sums = statistics.median(sum(r["per_kernel"].values()) for r in result)
print(f"ncu loop ranges, median: {loops / 1e6:.3f} MB; sum of its per-kernel ranges, median: "
      f"{sums / 1e6:.3f} MB")
for k in ORDER:
    mb = statistics.median(r["per_kernel"][k] for r in result) / 1e6
    print(f"  {k:12s} kernel range {mb:8.3f} MB")
