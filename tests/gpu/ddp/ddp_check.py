#!/usr/bin/env python3
"""ddp_check.py BUILD [--nproc N] [--out DIR] [--parts LIST] [--reps R] - issue 34 on a machine
with 2 or more GPUs, in one run (label gpu; exit 77 with fewer than 2 GPUs). NVLink multicast
stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 are
set for every run). Parts (--parts, default all of them, in this order):
  nccl      tests/gpu/nccl/nccl_check.py --nproc N: every collective recorded call for call on
            each rank, GPU times inside the NCCL kernels' CUPTI records, all-reduce busbw
            within 10 % of the job's own CUDA-event timing of the same sizes;
  ddp       `apx analyze -- torchrun --nproc_per_node=N ddp_train.py ddp` (a bf16 transformer
            under DistributedDataParallel): one trace per rank, merged by apx report (ranks
            section: N ranks, each GPU busy <= 100 %, every device <= 100 %), all-reduces with
            bytes, algorithm and protocol;
  straggler the same with rank 1 sleeping 20 ms before each step: the straggler finding names
            rank 1, its lateness within 30 % of the sleep;
  overlap   ddp and nooverlap (gradients all-reduced after backward, no DDP) timed without a
            profiler, --reps processes each, interleaved; nooverlap traced: its
            exposed-communication saving within 30 % of the measured difference;
  p2p       a 256 MiB cuda:0 -> cuda:1 copy loop under apx analyze: the report's peer-to-peer
            table has the pair, its bandwidth within 10 % of the program's event timing, and the
            link (NVLink/PCIe) from NVML;
  hta       Holistic Trace Analysis (when importable) on the ddp run's per-rank Chrome exports
            (apx export -F chrome): its comm/comp overlap and temporal breakdown run;
  cost      the plugin's cost on the DDP step: `apx analyze` with and without it
            (NCCL_PROFILER_PLUGIN=none), --reps processes each, interleaved: the ratio of step
            times with a bootstrap 95 % interval (target <= 1.03).
Prints PASS/FAIL/INFO rows and a table last; exit 1 on a FAIL. Files under --out (default
$OUT or a temp folder)."""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--nproc", type=int, default=0, help="ranks (default: every GPU)")
ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
ap.add_argument("--parts", default="nccl,ddp,straggler,overlap,p2p,hta,cost")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()
APX = os.path.join(os.path.abspath(a.build), "apx")
ENV = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
           NVSHMEM_DISABLE_NVLS="1")
rows = []


def row(kind, what, detail=""):
    rows.append((kind, what, detail))
    print("%-4s %-44s %s" % (kind, what, detail), flush=True)


def boot(values, n=2000):
    rnd = random.Random(1)
    r = sorted(statistics.median(rnd.choices(values, k=len(values))) for _ in range(n))
    return statistics.median(values), r[int(0.025 * n)], r[int(0.975 * n) - 1]


def torchrun(mode, extra=()):
    run = shutil.which("torchrun")
    return ([run] if run else [sys.executable, "-m", "torch.distributed.run"]) + \
        ["--standalone", "--nproc_per_node=%d" % a.nproc, os.path.join(HERE, "ddp_train.py"),
         mode, "--steps", str(a.steps)] + list(extra)


def run(cmd, name, env=None, timeout=300):
    """Run cmd, its output into OUT/name.log; (exit status, output)."""
    try:
        p = subprocess.run(cmd, env=env or ENV, capture_output=True, text=True, timeout=timeout)
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = 124, "timed out after %d s\n%s" % (timeout, e.stdout or "")
    with open(os.path.join(a.out, name + ".log"), "w") as f:
        f.write(text)
    return rc, text


def step_ms(text):
    m = re.search(r"^DDPSTEP \S+ ([0-9.]+)", text, re.M)
    return float(m.group(1)) if m else None


def traced(mode, name, extra=(), env=None):
    """apx analyze -- torchrun ... MODE: (report JSON or None, step ms, trace path)."""
    trace = os.path.join(a.out, name + ".apx")
    rc, text = run([APX, "analyze", "-q", "--force", "-o", trace, "--"] + torchrun(mode, extra),
                   name, env)
    row("PASS" if rc == 0 else "FAIL", "%s: apx analyze -- torchrun exits 0" % name,
        "exit %d (%s.log)" % (rc, name))
    rc, rep = run([APX, "report", "--format", "json", trace], name + "-report")
    if rc != 0:
        row("FAIL", "%s: apx report" % name, "exit %d" % rc)
        return None, step_ms(text), trace
    return json.loads(rep), step_ms(text), trace


def finding(rep, rule):
    return next((f for f in rep.get("findings", []) if f.get("rule") == rule), None)


def part_nccl():
    rc, text = run([sys.executable, os.path.join(HERE, "..", "nccl", "nccl_check.py"), APX,
                    os.path.join(a.out, "nccl"), "--nproc", str(a.nproc)], "nccl")
    for line in text.splitlines():
        if line[:4] in ("PASS", "FAIL", "INFO", "SKIP"):
            rows.append((line[:4].strip(), "nccl: " + line[5:50].strip(), line[50:].strip()))
            print("%-4s nccl: %s" % (line[:4], line[5:]), flush=True)
    row("PASS" if rc == 0 else "FAIL", "nccl_check.py --nproc %d" % a.nproc, "exit %d" % rc)


def part_ddp():
    rep, ms, trace = traced("ddp", "ddp")
    if not rep:
        return
    files = [f for f in os.listdir(a.out) if f.startswith("ddp.apx.rank")]
    row("PASS" if len(files) == a.nproc else "FAIL", "ddp: one trace per rank",
        "%d files: %s" % (len(files), ", ".join(sorted(files))))
    ranks = rep.get("ranks", {})
    per = [r for r in ranks.get("per_rank", []) if r.get("rank") is not None]
    row("PASS" if len(per) == a.nproc else "FAIL", "ddp: report merges the ranks",
        "world %s, ranks %s" % (ranks.get("world_size"), sorted(r["rank"] for r in per)))
    busy = [r.get("gpu_busy_pct") or 0 for r in per]
    dev = [d.get("busy_pct") or 0 for d in ranks.get("devices", [])]
    row("PASS" if busy and max(busy + dev) <= 100.0 else "FAIL", "ddp: GPU busy <= 100 % each",
        "ranks %s, devices %s" % (busy, dev))
    ar = next((f for f in rep.get("collectives", {}).get("functions", [])
               if f["func"] == "all_reduce"), None)
    row("PASS" if ar and ar.get("bytes") and ar.get("algo") and ar.get("proto") else "FAIL",
        "ddp: all-reduces with bytes, algorithm, protocol",
        json.dumps({k: ar.get(k) for k in ("calls", "bytes", "algo", "proto", "busbw_bps",
                                             "busbw_peak_pct")}) if ar else "none")
    row("INFO", "ddp: step", "%s ms a step traced (rank 0's timing)" % ms)


def part_straggler():
    sleep = 20.0
    rep, _, _ = traced("straggler", "straggler", ["--sleep-ms", str(sleep)])
    if not rep:
        return
    st = rep.get("ranks", {}).get("straggler") or {}
    late = (st.get("late_mean_ns") or 0) / 1e6
    f = finding(rep, "straggler")
    row("PASS" if st.get("rank") == 1 and f else "FAIL", "straggler: names rank 1",
        "straggler %s, finding %s" % (st.get("rank"), bool(f)))
    row("PASS" if abs(late - sleep) <= 0.3 * sleep else "FAIL",
        "straggler: lateness within 30 % of the sleep",
        "%.2f ms late on average against %.0f ms slept; finding saves %s" %
        (late, sleep, f and "%.1f ms" % (f.get("saving_ns", 0) / 1e6)))


def part_overlap():
    ms = {"ddp": [], "nooverlap": []}
    for i in range(a.reps):
        for mode in (("ddp", "nooverlap"), ("nooverlap", "ddp"))[i % 2]:
            _, text = run(torchrun(mode), "plain-%s-%d" % (mode, i))
            if step_ms(text):
                ms[mode].append(step_ms(text))
    if not ms["ddp"] or not ms["nooverlap"]:
        row("FAIL", "overlap: untraced runs", "ddp %s, nooverlap %s" % (ms["ddp"], ms["nooverlap"]))
        return
    diff = statistics.median(ms["nooverlap"]) - statistics.median(ms["ddp"])
    rep, _, _ = traced("nooverlap", "nooverlap")
    f = rep and finding(rep, "exposed-communication")
    # a step's saving (the ranks' ProfilerStep# ranges), else the run's over its steps
    est = f and (f.get("saving_per_step_ns") or f.get("saving_ns", 0) / (a.steps + 10)) / 1e6
    row("PASS" if est and abs(est / diff - 1) <= 0.3 else "FAIL",
        "overlap: exposed-communication within 30 %",
        "estimate %s ms a step, measured %.3f ms (nooverlap %s, ddp %s ms a step)" %
        (est and "%.3f" % est, diff, ms["nooverlap"], ms["ddp"]))


P2P = r'''
import sys, torch
n = 256 << 20
src = torch.empty(n, dtype=torch.uint8, device="cuda:0")
dst = torch.empty(n, dtype=torch.uint8, device="cuda:1")
for _ in range(3):
    dst.copy_(src)
torch.cuda.synchronize("cuda:0"); torch.cuda.synchronize("cuda:1")
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
with torch.cuda.device(0):
    s.record()
    for _ in range(20):
        dst.copy_(src)
    e.record()
    e.synchronize()
print("P2PBW %.3f" % (20 * n / (s.elapsed_time(e) / 1e3)))
'''


def part_p2p():
    trace = os.path.join(a.out, "p2p.apx")
    rc, text = run([APX, "analyze", "-q", "--force", "-o", trace, "--", sys.executable, "-c",
                    P2P], "p2p")
    m = re.search(r"P2PBW ([0-9.]+)", text)
    row("PASS" if rc == 0 and m else "FAIL", "p2p: program under apx analyze", "exit %d" % rc)
    rc, rep = run([APX, "report", "--format", "json", trace], "p2p-report")
    pairs = json.loads(rep).get("p2p_copies", []) if rc == 0 else []
    pair = next((p for p in pairs if p.get("src_device") != p.get("dst_device")), None)
    if not pair or not m:
        row("FAIL", "p2p: the pair in the report", "pairs %s" % pairs)
        return
    bw, want = pair.get("large_median_bw_bps") or pair.get("bw_bps") or 0, float(m.group(1))
    row("PASS" if abs(bw / want - 1) <= 0.10 else "FAIL", "p2p: bandwidth within 10 % of events",
        "apx %.1f GB/s, events %.1f GB/s, %s copies" % (bw / 1e9, want / 1e9, pair.get("copies")))
    row("PASS" if pair.get("link") else "FAIL", "p2p: link from NVML",
        "%s (%s NVLinks), peak %s, %s" % (pair.get("link"), pair.get("src_nvlinks"),
                                          pair.get("link_peak_bps"), pair.get("link_why")))


def part_hta():
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as e:
        row("INFO", "hta: not importable here", str(e)[:80])
        return
    d = os.path.join(a.out, "hta")
    os.makedirs(d, exist_ok=True)
    ranks = sorted(f for f in os.listdir(a.out) if f.startswith("ddp.apx.rank"))
    for f in ranks:
        rc, _ = run([APX, "export", "-F", "chrome", "--force", "-o",
                     os.path.join(d, f.replace(".apx", "") + ".json"), os.path.join(a.out, f)],
                    "hta-export")
        if rc:
            row("FAIL", "hta: apx export -F chrome", "%s: exit %d" % (f, rc))
            return
    try:
        t = TraceAnalysis(trace_dir=d)
        ov = t.get_comm_comp_overlap(visualize=False)
        tb = t.get_temporal_breakdown(visualize=False)
        row("PASS" if len(ov) == a.nproc and len(tb) >= a.nproc else "FAIL",
            "hta: overlap and temporal breakdown per rank",
            "overlap %s; breakdown rows %d" % (ov.to_dict("records"), len(tb)))
    except Exception as e:         # HTA's own failure on our export is the finding
        row("FAIL", "hta: TraceAnalysis on the exports", repr(e)[:200])


def part_cost():
    ms = {"plugin": [], "none": []}
    for i in range(a.reps):
        for mode in (("plugin", "none"), ("none", "plugin"))[i % 2]:
            env = dict(ENV)
            if mode == "none":
                env["NCCL_PROFILER_PLUGIN"] = "none"
            trace = os.path.join(a.out, "cost-%s-%d.apx" % (mode, i))
            _, text = run([APX, "analyze", "-q", "--force", "-o", trace, "--"] + torchrun("ddp"),
                          "cost-%s-%d" % (mode, i), env)
            if step_ms(text):
                ms[mode].append(step_ms(text))
            for f in os.listdir(a.out):             # traces are not kept: only the times
                if f.startswith("cost-%s-%d.apx" % (mode, i)):
                    os.remove(os.path.join(a.out, f))
    if len(ms["plugin"]) < 3 or len(ms["none"]) < 3:
        row("FAIL", "cost: runs", json.dumps(ms))
        return
    ratios = [p / n for p, n in zip(ms["plugin"], ms["none"])]
    r = boot(ratios)
    row("PASS" if r[0] <= 1.03 else "FAIL", "cost: plugin on the DDP step <= 1.03x",
        "%.3fx [%.3f, %.3f] over %d pairs; plugin %s, none %s ms" %
        (r[0], r[1], r[2], len(ratios), ms["plugin"], ms["none"]))


def main():
    try:
        import torch
        gpus = torch.cuda.device_count()
    except ImportError:
        gpus = 0
    if gpus < 2:
        print("SKIP: %d GPU(s); ddp_check.py needs 2 or more" % gpus)
        sys.exit(77)
    a.nproc = a.nproc or gpus
    os.makedirs(a.out, exist_ok=True)
    parts = {"nccl": part_nccl, "ddp": part_ddp, "straggler": part_straggler,
             "overlap": part_overlap, "p2p": part_p2p, "hta": part_hta, "cost": part_cost}
    for p in a.parts.split(","):
        if p not in parts:
            sys.exit("ddp_check.py: unknown part '%s' (%s)" % (p, ", ".join(parts)))
        parts[p]()
    print("\n%-4s %-44s %s" % ("", "check", "detail"))
    for kind, what, detail in rows:
        print("%-4s %-44s %s" % (kind, what, detail[:160]))
    sys.exit(1 if any(k == "FAIL" for k, _, _ in rows) else 0)


main()
