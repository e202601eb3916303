# self_p2p.py - NCCL send/recv from a rank to itself, on one GPU: the one NCCL path that a
# one-rank communicator still runs as an NCCL kernel (NCCL copies a one-rank collective with
# cudaMemcpyAsync and tells no profiler plugin; its send/recv go through the p2p path, kernel and
# plugin events included). Used two ways:
#   - imported by one_rank.py: run(calls) adds grouped send+recv pairs of several sizes to the
#     job's call log, so that nccl_check.py can compare apx's P2P records with them on one GPU;
#   - `python3 self_p2p.py --cost N OUT.json`: N small send/recv groups timed on the host (the
#     enqueue, where a profiler plugin adds its cost) and their GPU time, for
#     bench/nccl/plugin_cost.py, which runs it under apx with the plugin and without.
# NCCL is reached with ctypes through the libnccl that torch loaded (its communicator is our
# own, ncclCommInitRank with one rank), so no torch.distributed check on self-sends applies.
import ctypes
import json
import os
import statistics
import sys
import time

import torch

NCCL_FLOAT32 = 7            # ncclDataType_t: ncclFloat32


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def libnccl():
    """The libnccl.so.2 torch uses (loaded by torch.cuda.nccl), else the loader's."""
    torch.cuda.nccl.version()
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and os.path.basename(fields[5]).startswith("libnccl.so"):
                return ctypes.CDLL(fields[5])
    return ctypes.CDLL("libnccl.so.2")


class SelfComm:
    """A one-rank NCCL communicator and grouped send+recv to rank 0 on torch's stream."""

    def __init__(self):
        self.lib = lib = libnccl()
        vp, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        lib.ncclSend.argtypes = [vp, sz, i, i, vp, vp]
        lib.ncclRecv.argtypes = [vp, sz, i, i, vp, vp]
        lib.ncclCommInitRank.argtypes = [ctypes.POINTER(vp), i, UniqueId, i]
        lib.ncclCommDestroy.argtypes = [vp]
        uid = UniqueId()
        self.check(lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        self.comm = vp()
        self.check(lib.ncclCommInitRank(ctypes.byref(self.comm), 1, uid, 0), "ncclCommInitRank")

    @staticmethod
    def check(rc, what):
        if rc != 0:
            raise RuntimeError("%s failed: ncclResult %d" % (what, rc))

    def sendrecv(self, src, dst):
        s = torch.cuda.current_stream().cuda_stream
        lib = self.lib
        self.check(lib.ncclGroupStart(), "ncclGroupStart")
        self.check(lib.ncclSend(src.data_ptr(), src.numel(), NCCL_FLOAT32, 0, self.comm, s),
                   "ncclSend")
        self.check(lib.ncclRecv(dst.data_ptr(), dst.numel(), NCCL_FLOAT32, 0, self.comm, s),
                   "ncclRecv")
        self.check(lib.ncclGroupEnd(), "ncclGroupEnd")

    def close(self):
        torch.cuda.synchronize()
        self.lib.ncclCommDestroy(self.comm)


def run(calls, counts=(1 << 10, 1 << 16, 1 << 20, 1 << 24), reps=4):
    """Grouped send+recv of each count (float32), reps times, each timed with CUDA events;
    appends one "send" and one "recv" call a group to calls (the records apx should have)."""
    sc = SelfComm()
    for count in counts:
        src = torch.arange(count, dtype=torch.float32, device="cuda")
        dst = torch.zeros_like(src)
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            sc.sendrecv(src, dst)
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
            for func in ("send", "recv"):
                calls.append({"func": func, "count": count, "dtype": "float32",
                              "bytes": count * 4, "ms": ms})
        if not torch.equal(src, dst):
            raise RuntimeError("self send/recv of %d floats: the received data differ" % count)
    sc.close()


def cost(n, path):
    """n groups of 1 KiB: the host's time a group (enqueue) and the GPU's (events)."""
    sc = SelfComm()
    src = torch.ones(256, device="cuda")
    dst = torch.zeros_like(src)
    for _ in range(50):                             # warm up: connections, plugin pools
        sc.sendrecv(src, dst)
    torch.cuda.synchronize()
    host = []
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        sc.sendrecv(src, dst)
        host.append(time.perf_counter_ns() - t0)
    b.record()
    b.synchronize()
    sc.close()
    out = {"groups": n, "host_us_median": statistics.median(host) / 1e3,
           "host_us_mean": sum(host) / len(host) / 1e3, "gpu_us_per_group":
           a.elapsed_time(b) * 1e3 / n, "plugin": os.environ.get("NCCL_PROFILER_PLUGIN", "")}
    with open(path, "w") as f:
        json.dump(out, f)
    print("SELF_P2P_COST " + json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--cost":
        cost(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("usage: self_p2p.py --cost N OUT.json")
