#!/usr/bin/env python3
# json-order.py APX SRCDIR: the arrays of `apx report --format json` come in the order
# docs/report-schema.md ("Order of the arrays") states, on the committed suite traces (issue 37).
import glob
import json
import os
import subprocess
import sys

KINDS = ["device", "pinned", "managed"]


def nonincreasing(a, key):
    return all(key(a[i]) >= key(a[i + 1]) for i in range(len(a) - 1))


def check(d):
    bad = []

    def want(ok, what):
        if not ok:
            bad.append(what)

    want([x["id"] for x in d["devices"]] == sorted(x["id"] for x in d["devices"]), "devices by id")
    f = d["findings"]
    want(nonincreasing(f, lambda x: x["saving_ns"]), "findings by saving_ns")
    want([x["rank"] for x in f] == list(range(1, len(f) + 1)), "findings rank 1..n")
    want(nonincreasing(d["hotspots"], lambda x: (bool(x.get("user", True)),
                                                 x["gpu_ns"] + (x.get("gpu_bwd_ns") or 0),
                                                 x["host_ns"])), "hotspots by user, GPU, host time")
    want(nonincreasing(d["synchronization"]["causes"], lambda x: x["host_blocked_ns"]),
         "synchronization.causes by host_blocked_ns")
    want([x["device"] for x in d["timelines"]] == sorted(x["device"] for x in d["timelines"]),
         "timelines by device")
    want(d["streams"] == sorted(d["streams"], key=lambda x: (x["device"], x["stream"])),
         "streams by device, stream")
    want(nonincreasing(d["nvtx"], lambda x: (x["gpu_ns"], x["wall_ns"])), "nvtx by gpu_ns, wall_ns")
    la = d["memory"]["largest_allocations"]
    want(la == sorted(la, key=lambda x: (x["device"], KINDS.index(x["kind"]), -x["bytes"])),
         "memory.largest_allocations by device, kind, bytes")
    th = d.get("threads", [])
    want(nonincreasing(th, lambda x: x["samples"]), "threads by samples")
    want(all(a["samples"] != b["samples"] or a["pid"] != b["pid"] or a["tid"] < b["tid"]
             for a, b in zip(th, th[1:])), "threads' ties by tid")
    ow = d.get("os_waits", [])
    want(all(a["time_ns"] > b["time_ns"] or (a["time_ns"] == b["time_ns"] and a["nr"] < b["nr"])
             for a, b in zip(ow, ow[1:])), "os_waits by time_ns, nr")
    return bad


def main():
    apx, src = sys.argv[1], sys.argv[2]
    traces = sorted(glob.glob(os.path.join(src, "tests/fixtures/suite/*.apx")))
    if not traces:
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
        for what in check(d):
            print("%s: not in the stated order: %s" % (os.path.basename(t), what))
            fails += 1
    print("%d traces, %d failures" % (len(traces), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
