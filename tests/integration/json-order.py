#!/usr/bin/env python3
# json-order.py APX SRCDIR: the arrays of `apx report --format json` come in the order
# docs/report-schema.md ("Order of the arrays") states, on the committed traces (suite, real and
# the top-level fixtures); those of `apx diff --format json` (docs/diff.md) on the suite's planted
# and fixed pairs; those of `apx info --json --chunks` (docs/format.md) on every trace.
import json
import os
import subprocess
import sys

import fixture_traces

KINDS = ["device", "pinned", "managed"]
PYMEM = ["torch.allocated_bytes", "torch.reserved_bytes", "torch.peak_allocated_bytes",
         "torch.pinned_host_bytes", "process.rss_bytes", "process.rss_peak_bytes"]
IDLE = ["uvm", "graph", "sync", "alloc", "staging", "copy_calls", "data", "launch", "collector",
        "unknown"]


def nonincreasing(a, key):
    return all(key(a[i]) >= key(a[i + 1]) for i in range(len(a) - 1))


def check(d, one_proc):
    bad = []

    def want(ok, what):
        if not ok:
            bad.append(what)

    # devices, timelines, streams: first met; by id on a one-process trace (the suite's)
    dv = [x["id"] for x in d["devices"]]
    want(not one_proc or dv == sorted(dv), "devices by id")
    f = d["findings"]
    # by saving, but for a fix another one needs first (rules.c, prerequisites_first): a
    # sync-frequency finding moved up to just above launch-bound, which says so
    moved = [x for x in f if x["rule"] == "sync-frequency" and
             "ranked above launch-bound" in (x.get("saving_model") or "")]
    want(nonincreasing([x for x in f if x not in moved], lambda x: x["saving_ns"]),
         "findings by saving_ns")
    for x in moved:
        nxt = f[f.index(x) + 1] if f.index(x) + 1 < len(f) else {}
        want(nxt.get("rule") == "launch-bound", "a sync-frequency moved up sits above launch-bound")
    want([x["rank"] for x in f] == list(range(1, len(f) + 1)), "findings rank 1..n")
    want(nonincreasing(d["hotspots"], lambda x: (bool(x.get("user", True)),
                                                 x["gpu_ns"] + (x.get("gpu_bwd_ns") or 0),
                                                 x["host_ns"])), "hotspots by user, GPU, host time")
    want(nonincreasing(d["synchronization"]["causes"], lambda x: x["host_blocked_ns"]),
         "synchronization.causes by host_blocked_ns")
    tl = [x["device"] for x in d["timelines"]]
    want(not one_proc or tl == sorted(tl),
         "timelines by device")
    want(not one_proc or
         d["streams"] == sorted(d["streams"], key=lambda x: (x["device"], x["stream"])),
         "streams by device, stream")
    want(nonincreasing(d["nvtx"], lambda x: (x["gpu_ns"], x["wall_ns"])), "nvtx by gpu_ns, wall_ns")
    la = d["memory"]["largest_allocations"]
    want(la == sorted(la, key=lambda x: (x["device"], KINDS.index(x["kind"]), -x["bytes"])),
         "memory.largest_allocations by device, kind, bytes")
    th = d.get("threads", [])
    want(nonincreasing(th, lambda x: x["samples"]), "threads by samples")
    want(all(a["samples"] != b["samples"] or a["pid"] != b["pid"] or a["tid"] < b["tid"]
             for a, b in zip(th, th[1:])), "threads' ties by tid")
    for key in ("findings", "startup"):
        fl = d[key] if key == "findings" else (d.get("startup") or {}).get("findings", [])
        for x in fl:
            ln = x.get("lines") or []
            want(nonincreasing(ln, lambda y: (y["ns"], y["count"])), key + "[].lines by ns, count")
    sf = (d.get("startup") or {}).get("findings", [])
    want(nonincreasing(sf, lambda x: x["saving_ns"]), "startup.findings by saving_ns")
    want([x["rank"] for x in sf] == list(range(1, len(sf) + 1)), "startup.findings rank 1..n")
    cw = d.get("cross_stream_waits", [])
    want(nonincreasing(cw, lambda x: x["idle_ns"]), "cross_stream_waits by idle_ns")
    for k in d.get("kernel_counters", []):
        want(nonincreasing(k.get("stalls") or [], lambda x: x["cycles_per_inst"]),
             "kernel_counters[].stalls by cycles_per_inst")
    ot = d["memory"].get("over_time", [])
    want(ot == sorted(ot, key=lambda x: (x["device"] is None, x["device"] or 0,
                                         PYMEM.index(x["metric"]))),
         "memory.over_time by device, metric")
    heap = d.get("heap") or {}
    sites = heap.get("sites") or []
    want(all(a.get("user", True) >= b.get("user", True) for a, b in zip(sites, sites[1:])) or
         d.get("frames_all"), "heap.sites user first")
    want(all(a.get("user") != b.get("user") or a["bytes"] >= b["bytes"]
             for a, b in zip(sites, sites[1:])), "heap.sites by bytes")
    ls = heap.get("leak_sites") or []
    want(nonincreasing(ls, lambda x: (x["leak_bytes"], x["leak_samples"])),
         "heap.leak_sites by leak_bytes, leak_samples")
    for t in th:
        want(nonincreasing(t.get("syscalls") or [], lambda x: x["samples"]),
             "threads[].syscalls by samples")

    def flame(node, where):
        kids = node.get("children") or []
        # the folded children's node, "(other: N)", comes last whatever its value
        ranked = [k for k in kids if not str(k.get("name")).startswith("(other: ")]
        want(nonincreasing(ranked, lambda x: x["value"]), where + " children by value")
        want(all(str(k.get("name")).startswith("(other: ") is False for k in kids[:len(ranked)]),
             where + " (other: N) last")
        for k in kids:
            flame(k, where)
    for side in ("gpu", "host"):
        root = (d.get("flame") or {}).get(side)
        if root:
            flame(root, "flame." + side)
    pr = (d.get("ranks") or {}).get("per_rank", [])
    rk = [x["rank"] for x in pr]
    want(rk == sorted(rk, key=lambda r: (r is None, r or 0)), "ranks.per_rank by rank")
    ow = d.get("os_waits", [])
    want(all(a["time_ns"] > b["time_ns"] or (a["time_ns"] == b["time_ns"] and a["nr"] < b["nr"])
             for a, b in zip(ow, ow[1:])), "os_waits by time_ns, nr")
    return bad


def check_diff(d):
    bad = []
    k = d["kernels"]
    key = [(abs(x["after_ns"] - x["before_ns"]), max(x["before_ns"], x["after_ns"])) for x in k]
    if not all(key[i] > key[i + 1] or (key[i] == key[i + 1] and k[i]["name"] <= k[i + 1]["name"])
               for i in range(len(k) - 1)):
        bad.append("kernels by |change_ns|, larger side, name")
    c = [x["cause"] for x in d["idle"]]
    if c != [x for x in IDLE if x in c]:
        bad.append("idle in the causes' order")
    return bad


def check_info(d):
    bad = []
    for f in d["files"]:
        ct = f.get("chunk_table") or []
        if [x["chunk"] for x in ct] != list(range(len(ct))) or \
           any(a["offset"] >= b["offset"] for a, b in zip(ct, ct[1:])):
            bad.append("chunk_table in file order")
    return bad


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True)
    try:
        return json.loads(p.stdout), p.returncode
    except ValueError:
        return None, p.returncode


def main():
    apx, src = sys.argv[1], sys.argv[2]
    suite = fixture_traces.in_folder(os.path.join(src, "tests/fixtures/suite"))
    traces = suite + fixture_traces.in_folder(os.path.join(src, "tests/fixtures/real")) + \
        fixture_traces.in_folder(os.path.join(src, "tests/fixtures"))
    if not suite:
        print("no suite traces")
        return 77
    fails = 0
    for t in traces:
        p = subprocess.run([apx, "report", "--format", "json", t], capture_output=True)
        try:
            d = json.loads(p.stdout)
        except ValueError:
            print("%s: no JSON (exit %d)" % (t, p.returncode))
            fails += 1
            continue
        for what in check(d, t in suite):
            print("%s: not in the stated order: %s" % (os.path.basename(t), what))
            fails += 1
    for t in traces:
        d, rc = run_json([apx, "info", "--json", "--chunks", t])
        if d is None:
            print("%s: info: no JSON (exit %d)" % (t, rc))
            fails += 1
            continue
        for what in check_info(d):
            print("%s: info: not in the stated order: %s" % (os.path.basename(t), what))
            fails += 1
    pairs = 0
    for b in suite:
        if not b.endswith("_planted.apx"):
            continue
        a = b[:-len("_planted.apx")] + "_fixed.apx"
        if not os.path.exists(a):
            continue
        pairs += 1
        d, rc = run_json([apx, "diff", "--format", "json", b, a])
        if d is None:
            print("%s: diff: no JSON (exit %d)" % (os.path.basename(b), rc))
            fails += 1
            continue
        for what in check_diff(d):
            print("%s: diff: not in the stated order: %s" % (os.path.basename(b), what))
            fails += 1
    print("%d traces, %d diff pairs, %d failures" % (len(traces), pairs, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
