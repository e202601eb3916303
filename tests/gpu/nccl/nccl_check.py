#!/usr/bin/env python3
# nccl_check.py - does apx's NCCL plugin record what a one-rank torchrun job did (its
# collectives, which NCCL runs without the plugin on one rank, and its send/recv to itself,
# which it runs as its p2p kernel: one_rank.py, self_p2p.py)? Runs `apx analyze -o
# OUT/one_rank.apx -- torchrun --standalone --nproc_per_node=1 one_rank.py OUT/one_rank.json`,
# then compares the COLLECTIVE records of the rank's trace (read with apx-dump) against the
# program's own log: for every (func, bytes) the number of records equals the number of calls,
# and apx report's collectives table gives the same calls and bytes per function; the records'
# GPU time (end - start) is within the CUDA-event timing the program took around the same call
# (apx's <= events + 5 us), their algbw is printed next to the events', and each timed record
# lies inside CUPTI's record of the NCCL kernel that ran it (the plugin's globaltimer clock).
# On one rank NCCL gives a send to itself no GPU times: those checks need 2 GPUs (INFO row).
# With --from DIR it checks a kept folder again without a GPU (ctest nccl_fixture on
# tests/fixtures/nccl). Exit 0 when every PASS row passed, 1 otherwise, 77 when no GPU /
# torch.distributed NCCL, or when NCCL handed the plugin no operation at all.
import argparse
import bisect
import collections
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FUNCS = {1: "all_reduce", 2: "all_gather", 3: "reduce_scatter", 4: "broadcast", 5: "reduce",
         6: "all_to_all", 7: "send", 8: "recv", 9: "gather", 10: "scatter"}

ap = argparse.ArgumentParser()
ap.add_argument("apx", help="the apx binary; apx-dump is looked for next to it")
ap.add_argument("out", nargs="?", default="nccl-out")
ap.add_argument("--from", dest="src", metavar="DIR", help="check a kept folder again")
ap.add_argument("--timeout", type=float, default=240)
ap.add_argument("--nproc", type=int, default=1,
                help="ranks (GPUs); 2 or more also checks GPU times, clocks and busbw")
args = ap.parse_args()
dump = os.path.join(os.path.dirname(os.path.abspath(args.apx)), "apx-dump")
rows = []


def row(kind, what, detail=""):
    rows.append((kind, what, detail))
    print("%-4s %-46s %s" % (kind, what, detail), flush=True)


def run_job(out):
    try:
        import torch
        import torch.distributed as dist
        if not torch.cuda.is_available() or not dist.is_nccl_available():
            raise ImportError("no CUDA device or no NCCL in torch.distributed")
    except ImportError as e:
        print("SKIP: %s" % e)
        sys.exit(77)
    os.makedirs(out, exist_ok=True)
    torchrun = shutil.which("torchrun")
    launcher = [torchrun] if torchrun else [sys.executable, "-m", "torch.distributed.run"]
    cmd = [args.apx, "analyze", "-o", os.path.join(out, "one_rank.apx"), "--"] + launcher + \
        ["--standalone", "--nproc_per_node=%d" % args.nproc, os.path.join(HERE, "one_rank.py"),
         os.path.join(out, "one_rank.json")]
    with open(os.path.join(out, "one_rank.log"), "w") as log:
        p = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout)
    row("PASS" if p.returncode == 0 else "FAIL", "apx analyze -- torchrun exits 0",
        "exit %d (one_rank.log)" % p.returncode)


def records(path):
    out = subprocess.run([dump, path], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def main():
    out = args.src or args.out
    if not args.src:
        run_job(out)
    files = sorted(glob.glob(os.path.join(out, "one_rank.apx.rank*")))
    want_files = args.nproc if not args.src else max(1, len(files))
    row("PASS" if len(files) == want_files else "FAIL", "one trace per rank (FILE.rankR.PID)",
        ", ".join(os.path.basename(f) for f in files) or "none")
    files = [f for f in files if ".rank0." in os.path.basename(f)] or files
    if not files:
        return
    log = json.load(open(os.path.join(out, "one_rank.json")))
    recs = records(files[0])
    hdr = next(r for r in recs if r["type"] == "header")
    row("PASS" if hdr.get("rank") == 0 else "FAIL", "header rank 0", "rank %s" % hdr.get("rank"))
    colls = [r for r in recs if r["type"] == "collective"]
    kernels = collections.Counter(r["name"] for r in recs if r["type"] == "kernel"
                                  and "nccl" in r.get("name", "").lower())
    row("INFO", "NCCL %s, world %d" % (log["nccl_version"], log["world"]),
        "%d calls, %d COLLECTIVE records, nccl kernels %s" %
        (len(log["calls"]), len(colls), dict(kernels.most_common(4))))
    calls = log["calls"]
    if log["world"] == 1:
        # NCCL runs a one-rank communicator's collectives as plain copies: no NCCL kernel and
        # no event for the profiler plugin (NCCL 2.28.9: the plugin loads, "v5"); its
        # send/recv to itself (self_p2p.py) still go through the p2p kernel and the plugin
        calls = [c for c in calls if c["func"] in ("send", "recv")]
        row("INFO", "one rank: collectives left out",
            "%d collective calls NCCL copies without the plugin; %d send/recv calls checked"
            % (len(log["calls"]) - len(calls), len(calls)))
        if not calls or not colls:
            row("SKIP", "one rank: NCCL handed no operation to the plugin",
                "%d send/recv calls, %d records; collectives need >= 2 GPUs"
                % (len(calls), len(colls)))
            return
    report_check(files[0], calls, log["world"])
    want = collections.Counter((c["func"], c["bytes"]) for c in calls)
    got = collections.Counter((FUNCS.get(r.get("func"), "?"), r.get("bytes")) for r in colls)
    miss = {k: (want[k], got.get(k, 0)) for k in want if got.get(k, 0) != want[k]}
    extra = {k: got[k] for k in got if k not in want}
    row("PASS" if not miss and not extra else "FAIL", "records = calls per (func, bytes)",
        "all %d kinds match" % len(want) if not miss and not extra else
        "differ (want, got): %s extra %s" % (dict(list(miss.items())[:6]), extra))
    # time: pair the i-th call of a (func, bytes) with its i-th record, in start order
    byk = collections.defaultdict(list)
    for r in sorted(colls, key=lambda r: r.get("enqueue_ns", 0)):
        byk[(FUNCS.get(r.get("func")), r.get("bytes"))].append(r)
    seen = collections.Counter()
    timed = bad = 0
    lines = []
    for c in calls:
        k = (c["func"], c["bytes"])
        i = seen[k]
        seen[k] += 1
        if i >= len(byk[k]):
            continue
        r = byk[k][i]
        if not r.get("start_ns") or not r.get("end_ns"):
            continue
        ns = r["end_ns"] - r["start_ns"]
        timed += 1
        if ns > c["ms"] * 1e6 + 5000:
            bad += 1
        if c["bytes"] >= 1 << 24:
            lines.append("%s %d MiB %s: apx %.1f GB/s, events %.1f GB/s" %
                         (c["func"], c["bytes"] >> 20, c["dtype"], c["bytes"] / max(ns, 1),
                          c["bytes"] / (c["ms"] * 1e6)))
    if not timed and log["world"] == 1:
        # NCCL adds its profiler proxy op (which polls the kernel's channel counters and
        # starts the kernel-channel events) only where the operation has a peer to reach: a
        # send to itself gets none (NCCL 2.28.9), so no record of one rank has GPU times
        row("INFO", "GPU times: none on one rank", "NCCL starts no kernel-channel event for a "
            "send to itself: the GPU-time and clock checks need 2 GPUs")
        return
    row("PASS" if timed and not bad else "FAIL", "GPU time within the events' timing",
        "%d timed, %d longer than events + 5 us" % (timed, bad))
    for ln in lines[:8]:
        row("INFO", "algbw", ln)
    clock_check(colls, [r for r in recs if r["type"] == "kernel"
                        and "nccl" in r.get("name", "").lower()])


def report_check(path, calls, world=1):
    """apx report's collectives table: calls and bytes per function, as the program made them
    (every rank's records: world x rank 0's calls); with 2 or more ranks, all-reduce busbw of
    the 16 MiB-256 MiB calls against the program's own CUDA-event timing of them (nccl-tests'
    definition, busbw = S / t x 2(n-1)/n), within 10 %."""
    base = os.path.join(os.path.dirname(path), "one_rank.apx")
    out = subprocess.run([args.apx, "report", base if world > 1 else path, "--format", "json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        row("FAIL", "apx report --format json", "exit %d: %s" % (out.returncode,
                                                                 out.stderr[-300:]))
        return
    funcs = {f["func"]: f for f in json.loads(out.stdout).get("collectives", {})
             .get("functions", [])}
    want = collections.defaultdict(lambda: [0, 0])
    for c in calls:
        want[c["func"]][0] += world
        want[c["func"]][1] += c["bytes"] * world
    got = {k: [funcs[k]["calls"], funcs[k]["bytes"]] if k in funcs else None for k in want}
    row("PASS" if all(got[k] == want[k] for k in want) and len(funcs) == len(want) else "FAIL",
        "report: calls and bytes per function", "; ".join(
            "%s %s (program %d calls, %d B)" % (k, got[k], want[k][0], want[k][1])
            for k in sorted(want)))
    if world < 2 or "all_reduce" not in funcs:
        return
    big = [c for c in calls if c["func"] == "all_reduce" and 16 << 20 <= c["bytes"] < 256 << 20]
    size = next((z for z in funcs["all_reduce"].get("sizes", [])
                 if z.get("bucket") == "16MiB-256MiB"), None)
    if not big or not size or not size.get("busbw_bps"):
        row("FAIL", "all-reduce busbw 16MiB-256MiB", "no such calls or no busbw in the report")
        return
    events = sum(c["bytes"] for c in big) / (sum(c["ms"] for c in big) / 1e3) * \
        2 * (world - 1) / world
    ratio = size["busbw_bps"] / events
    row("PASS" if abs(ratio - 1) <= 0.10 else "FAIL", "all-reduce busbw within 10 % of events",
        "apx %.1f GB/s, events %.1f GB/s (%.3fx), %d calls; algo %s proto %s" %
        (size["busbw_bps"] / 1e9, events / 1e9, ratio, len(big), funcs["all_reduce"].get("algo"),
         funcs["all_reduce"].get("proto")))


def clock_check(colls, kernels):
    """The plugin's GPU times (the globaltimer put on the trace clock) against CUPTI's record
    of the NCCL kernel that ran them: each timed record must fall inside a kernel, within
    5 us at either end; the median offset of the starts is printed."""
    kernels = sorted(kernels, key=lambda k: k["start_ns"])
    starts = [k["start_ns"] for k in kernels]
    inside, off = 0, []
    timed = [r for r in colls if r.get("start_ns") and r.get("end_ns")]
    for r in timed:
        i = bisect.bisect_right(starts, r["start_ns"] + 5000) - 1
        if i < 0:
            continue
        k = kernels[i]
        if k["start_ns"] - 5000 <= r["start_ns"] and r["end_ns"] <= k["end_ns"] + 5000:
            inside += 1
            off.append(r["start_ns"] - k["start_ns"])
    if not timed or not kernels:
        row("FAIL", "GPU times against the NCCL kernels", "%d timed records, %d NCCL kernels"
            % (len(timed), len(kernels)))
        return
    off.sort()
    row("PASS" if inside == len(timed) else "FAIL", "GPU times inside CUPTI's NCCL kernels",
        "%d of %d within 5 us; start after the kernel's: median %.2f us, max %.2f us"
        % (inside, len(timed), off[len(off) // 2] / 1e3 if off else 0,
           off[-1] / 1e3 if off else 0))


main()
fails = [r for r in rows if r[0] == "FAIL"]
if not fails and any(r[0] == "SKIP" for r in rows):
    print("nccl_check: skipped (one rank)")
    sys.exit(77)
print("nccl_check: %d PASS, %d FAIL" % (sum(r[0] == "PASS" for r in rows), len(fails)))
sys.exit(1 if fails else 0)
