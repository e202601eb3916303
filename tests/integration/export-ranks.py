#!/usr/bin/env python3
"""export-ranks.py APX RANKS_GEN SRCDIR HAVE_SQLITE - `apx export` of a distributed run (issue
33, item 5) on ranks-gen's four ranks on two hosts (tests/integration/ranks-gen.c says every
number):

- one Chrome/Kineto JSON per rank, named with the rank, the launcher's file left out and said;
  each read the way Holistic Trace Analysis (facebookresearch/HolisticTraceAnalysis f4d0062)
  reads it, reimplemented here from its code because HTA cannot be installed: the rank by
  trace_file.py's regular expression (create_rank_to_trace_dict), distributedInfo, the events
  trace_parser.py keeps (dur and cat present; stream made numeric), kernel types by types.py's
  patterns, communication_analysis.py's comp/comm overlap per rank, straggler.py's metric
  (iterations assigned as trace.py's add_iteration does) naming the late rank; the collective
  arguments on the NCCL kernels (Kineto's names), the host events, the kernel-less collective;
  one time origin for all ranks;
- --merge-ranks, perfetto, -o FILE, -o DIR, -o - and an existing output;
- one SQLite per rank: NCCL_COLLECTIVES rows = COLLECTIVE records, META rank/world_size, the
  kernel join; docs/export.md's cross-rank queries (ranks-table, ranks-load, ranks-query blocks)
  run as documented (attach, load, detach, one by one) against exact answers; the pandas form
  when pandas is installed.
Exit 0 when all hold; prints one line per failure."""
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

apx, gen, src, have_sqlite = sys.argv[1:5]
fails = []
N = 4
US, MS = 1000, 1000000


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL", what)
    return ok


def run(*args, cwd=None):
    return subprocess.run([apx, *args], capture_output=True, text=True, cwd=cwd)


def late(r):
    return 2 * MS if r == N - 1 else r * 10 * US


# ---- HTA, reimplemented -------------------------------------------------------------------------

HTA_RANK_RE = re.compile(r'"rank":\s+(\d+)')                      # trace_file.py
COMM_RE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")  # types.py, Communicate
MEM_RE = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")     # types.py, Memory
COMPUTE_NOT_RE = re.compile(                                       # types.py, Compute (inverse)
    r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)"
    r"|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)"
    r"|(^collective_subgraph_execution)")
STEP_RE = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def hta_rank(path):
    """create_rank_to_trace_dict: the first line with "rank": N, and its line number."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = HTA_RANK_RE.search(line)
            if m:
                return int(m.group(1)), n
    return None, None


def kernel_type(name):
    """utils.get_kernel_type"""
    if COMM_RE.match(name):
        return "COMMUNICATION"
    if MEM_RE.match(name):
        return "MEMORY"
    if not COMPUTE_NOT_RE.match(name):
        return "COMPUTATION"
    return "OTHER"


def hta_events(doc):
    """trace_parser: the events kept (dur and cat present, cat != Trace), args flattened, stream
    numeric (-1 when missing or not a number), correlation -1 when missing."""
    out = []
    for e in doc["traceEvents"]:
        if "dur" not in e or "cat" not in e or e["cat"] == "Trace":
            continue
        a = e.get("args", {})
        s = a.get("stream", -1)
        out.append({"name": e["name"], "cat": e["cat"], "ts": e["ts"], "dur": e["dur"],
                    "stream": s if isinstance(s, int) else -1,
                    "correlation": a.get("correlation", -1), "args": a})
    return out


def merge(iv):
    """utils.merge_kernel_intervals"""
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def comm_comp_overlap(ev):
    """communication_analysis.get_comm_comp_overlap_value: time both merged comm and merged comp
    kernels run over the merged comm time (its status sweep: running == 3)."""
    gpu = [e for e in ev if e["stream"] != -1]
    comm = merge([(e["ts"], e["ts"] + e["dur"]) for e in gpu
                  if kernel_type(e["name"]) == "COMMUNICATION"])
    comp = merge([(e["ts"], e["ts"] + e["dur"]) for e in gpu
                  if kernel_type(e["name"]) == "COMPUTATION"])
    both = sum(max(0, min(a[1], b[1]) - max(a[0], b[0])) for a in comm for b in comp)
    return both / sum(e - s for s, e in comm)


def add_iteration(ev):
    """trace.add_iteration: host events by the ProfilerStep#N they start in; GPU events (stream >
    0) by the host event of the same correlation (transform_correlation_to_index)."""
    steps = [(e["ts"], e["dur"], int(STEP_RE.match(e["name"]).group(1))) for e in ev
             if STEP_RE.match(e["name"])]

    def step_of(ts):
        it = -1
        for s, d, i in steps:
            if s <= ts < s + d:
                it = i
        return it
    host = {}
    for e in ev:
        if e["stream"] < 0:
            e["iteration"] = step_of(e["ts"])
            if e["correlation"] not in (-1, None) and e["cat"].startswith("cuda_"):
                host[e["correlation"]] = e
    for e in ev:
        if e["stream"] > 0:
            h = host.get(e["correlation"])
            e["iteration"] = h["iteration"] if h else -1
    return ev


def hta_stragglers(per_rank):
    """straggler.py: _compute_normalized_start_time_of_significant_comm_kernels then
    _get_top_k_stragglers_with_metric(n_stragglers=1): {rank: times a straggler}."""
    t0 = min(e["ts"] for ev in per_rank.values() for e in ev)   # Trace._align_all_ranks
    rows = [dict(e, rank=r, ts=e["ts"] - t0) for r, ev in per_rank.items() for e in ev
            if e.get("iteration", -1) >= 0]
    iters = sorted({e["iteration"] for e in rows})
    tmin = min(e["ts"] for e in rows)
    mean_iter = (max(e["ts"] + e["dur"] for e in rows) - tmin) / len(iters)
    long_comm = [e for e in rows if e["stream"] > 0 and e["iteration"] > 0 and
                 e["dur"] >= mean_iter * 0.01 and e["name"].startswith("ncclKernel")]
    last = {}
    for e in sorted(long_comm, key=lambda e: e["ts"]):
        last[(e["rank"], e["stream"], e["iteration"], e["name"])] = e
    by_cand = {}
    for (r, s, it, nm), e in last.items():
        by_cand.setdefault((s, nm), {}).setdefault(it, []).append(e)

    def std(xs):
        m = sum(xs) / len(xs)
        return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5 if len(xs) > 1 else 0.0
    cand = max(by_cand, key=lambda k: sum(std([e["dur"] / mean_iter for e in v])
                                          for v in by_cand[k].values()) / len(by_cand[k]))
    count = {r: 0 for r in per_rank}
    for it, es in by_cand[cand].items():
        top = max((e["ts"] - tmin) / mean_iter for e in es)
        for e in es:
            if (e["ts"] - tmin) / mean_iter >= top:
                count[e["rank"]] += 1
    return count, len(by_cand[cand])


# ---- chrome -------------------------------------------------------------------------------------

def check_chrome(tmp):
    r = run("export", "-F", "chrome", "run.apx", cwd=tmp)
    check(r.returncode == 0, f"chrome per rank: exit {r.returncode}: {r.stderr}")
    check("4 ranks: one chrome file each" in r.stderr and "1 file without a rank" in r.stderr,
          f"chrome per rank: stderr {r.stderr}")
    files = {k: os.path.join(tmp, f"run.rank{k}.json") for k in range(N)}
    check(sorted(glob.glob(os.path.join(tmp, "*.json"))) == sorted(files.values()),
          f"files {sorted(os.listdir(tmp))}")
    per_rank, docs = {}, {}
    for k, path in files.items():
        if not check(os.path.exists(path), f"{path} missing"):
            return
        rank, line = hta_rank(path)
        check(rank == k and line == 3, f"rank {k}: HTA reads rank {rank} on line {line}")
        doc = json.load(open(path))
        docs[k] = doc
        di = doc.get("distributedInfo", {})
        pgs = [{"pg_name": "1234abcd5678ef00", "pg_desc": "nccl communicator",
                "backend_config": "cuda:nccl", "pg_size": N}]
        if k < 2:      # ranks 0 and 1 also have the send/recv pair's communicator
            pgs.append(dict(pgs[0], pg_name="0000000000000077", pg_size=2))
        check(di.get("backend") == "nccl" and di.get("rank") == k and di.get("world_size") == N
              and di.get("local_rank") == k % (N // 2) and di.get("pg_count") == len(pgs) and
              di.get("pg_config") == pgs and
              di.get("nccl_version") == "unknown", f"rank {k}: distributedInfo {di}")
        ev = hta_events(doc)
        per_rank[k] = add_iteration(ev)
        nccl_k = [e for e in ev if e["name"].startswith("ncclKernel")]
        check(len(nccl_k) == 4, f"rank {k}: {len(nccl_k)} NCCL kernels")
        for e in nccl_k:
            a = e["args"]
            want = {"Collective name": "allreduce", "In msg nelems": 32 << 20,
                    "Out msg nelems": 32 << 20, "Group size": N, "dtype": "BFloat16",
                    "Process Group Name": "1234abcd5678ef00", "Rank": k,
                    "nccl algorithm": "ring", "nccl protocol": "ll", "nccl channels": 8,
                    "nccl bytes": 64 << 20}
            got = {key: a.get(key) for key in want}
            check(got == want and a.get("Seq") == e["iteration"] and a.get("stream") == 13,
                  f"rank {k}: NCCL kernel args {a}")
        host = [e for e in ev if e["name"] == "record_param_comms"]
        check(len(host) == (6 if k < 2 else 5) and all(e["cat"] == "cpu_op" and
              e["stream"] == -1 and e["dur"] == 20.0 for e in host),
              f"rank {k}: {len(host)} record_param_comms events")
        p2p = [e["args"] for e in host if e["args"]["Collective name"] in ("send", "recv")]
        if k < 2:
            check(p2p == [dict(p2p[0], **{"Collective name": "recv" if k else "send",
                                          "Group size": 2, "In msg nelems": 0 if k else 1 << 20,
                                          "Out msg nelems": 1 << 20 if k else 0,
                                          ("Src Rank" if k else "Dst Rank"): 1 - k})],
                  f"rank {k}: p2p args {p2p}")
        lone = [e for e in ev if e["name"] == "nccl:broadcast"]
        check(len(lone) == 1 and lone[0]["cat"] == "kernel" and lone[0]["stream"] == 13 and
              lone[0]["dur"] == 200.0 and lone[0]["args"].get("Root") == 0 and
              "apx" in lone[0]["args"], f"rank {k}: kernel-less broadcast {lone}")
        check(sum(e["cat"] == "kernel" for e in ev) == 13, f"rank {k}: kernel events")
    # one time origin: every rank's all-reduce kernel of step i ends at the same instant
    ends = {k: sorted(round(e["ts"] + e["dur"], 3) for e in per_rank[k]
                      if e["name"].startswith("ncclKernel")) for k in per_rank}
    check(all(v == [10000.0, 20000.0, 30000.0, 40000.0] for v in ends.values()),
          f"NCCL kernel ends per rank {ends}")
    check(len({d.get("baseTimeNanoseconds") for d in docs.values()}) == 1, "baseTimeNanoseconds")
    # HTA's comm/comp overlap: 1 ms of the elementwise kernel under each all-reduce, except on
    # the late rank, whose all-reduce starts after it; comm = 4 all-reduces + the broadcast
    for k, ev in per_rank.items():
        comm = 4 * (9 * MS - (5300 * US + 30 * US + late(k))) + 200 * US
        want = 0.0 if k == N - 1 else 4 * MS / comm
        got = comm_comp_overlap(ev)
        check(abs(got - want) < 1e-9, f"rank {k}: comm/comp overlap {got}, want {want}")
    count, niter = hta_stragglers(per_rank)
    check(niter == 3 and count == {0: 0, 1: 0, 2: 0, 3: 3},
          f"HTA straggler metric: {count} over {niter} iterations")


def check_cli(tmp):
    r = run("export", "-F", "chrome", "--merge-ranks", "-o", "all.json", "run.apx", cwd=tmp)
    doc = json.load(open(os.path.join(tmp, "all.json"))) if r.returncode == 0 else {}
    check(r.returncode == 0 and doc.get("distributedInfo", {}).get("rank") == 0 and
          "apx_ranks_note" in doc, f"--merge-ranks: exit {r.returncode} {r.stderr}")
    r = run("export", "-F", "perfetto", "run.apx", cwd=tmp)
    check(r.returncode == 0 and os.path.exists(os.path.join(tmp, "run.perfetto-trace")) and
          not glob.glob(os.path.join(tmp, "*.rank*.perfetto-trace")), f"perfetto: {r.stderr}")
    r = run("export", "-F", "chrome", "-o", "out.json", "run.apx", cwd=tmp)
    check(r.returncode == 0 and all(os.path.exists(os.path.join(tmp, f"out.rank{k}.json"))
                                    for k in range(N)), f"-o out.json: {r.stderr}")
    os.mkdir(os.path.join(tmp, "hta"))
    r = run("export", "-F", "chrome", "-o", "hta", "run.apx", cwd=tmp)
    check(r.returncode == 0 and sorted(os.listdir(os.path.join(tmp, "hta"))) ==
          [f"run.rank{k}.json" for k in range(N)], f"-o DIR: {r.stderr}")
    # an existing output: nothing written (exit 2), with --force all replaced
    before = os.path.getmtime(os.path.join(tmp, "out.rank3.json"))
    os.unlink(os.path.join(tmp, "out.rank0.json"))
    r = run("export", "-F", "chrome", "-o", "out.json", "run.apx", cwd=tmp)
    check(r.returncode == 2 and "exists" in r.stderr and
          not os.path.exists(os.path.join(tmp, "out.rank0.json")),
          f"existing per-rank output: exit {r.returncode} {r.stderr}")
    r = run("export", "-F", "chrome", "-f", "-o", "out.json", "run.apx", cwd=tmp)
    check(r.returncode == 0 and os.path.exists(os.path.join(tmp, "out.rank0.json")) and
          os.path.getmtime(os.path.join(tmp, "out.rank3.json")) >= before, f"--force: {r.stderr}")
    r = run("export", "-F", "chrome", "-o", "-", "run.apx", cwd=tmp)
    check(r.returncode == 2 and "one file each" in r.stderr, f"-o -: exit {r.returncode} {r.stderr}")
    r = run("export", "-F", "chrome", "-o", "nowhere/", "run.apx", cwd=tmp)
    check(r.returncode == 1 and "no such folder" in r.stderr, f"-o missing/: {r.stderr}")
    # one rank's files alone: one file, no rank in its name
    r = run("export", "-F", "chrome", "--single", "-o", "one.json", "run.apx.rank2.5002", cwd=tmp)
    check(r.returncode == 0 and json.load(open(os.path.join(tmp, "one.json")))
          ["distributedInfo"]["rank"] == 2, f"one rank: {r.stderr}")


# ---- sqlite -------------------------------------------------------------------------------------

def doc_blocks():
    text = open(os.path.join(src, "docs", "export.md")).read()
    blocks = {}
    for b in re.findall(r"```sql\n(.*?)```", text, re.S):
        m = re.match(r"-- (ranks-table|ranks-load|ranks-query: \S+)\n", b)
        if m:
            blocks[m.group(1)] = b
    return blocks


GPU = lambda k: 4 * (9 * MS - 2 * US - (5300 * US + 32 * US + late(k)))
EXPECTED = {
    "rank-collective-time": [
        (0, "ncclAllReduce", 4, GPU(0), 4 << 26), (0, "ncclBroadcast", 1, 200 * US, 4096),
        (0, "ncclSend", 1, None, 1 << 20),
        (1, "ncclAllReduce", 4, GPU(1), 4 << 26), (1, "ncclBroadcast", 1, 200 * US, 4096),
        (1, "ncclRecv", 1, None, 1 << 20),
        (2, "ncclAllReduce", 4, GPU(2), 4 << 26), (2, "ncclBroadcast", 1, 200 * US, 4096),
        (3, "ncclAllReduce", 4, GPU(3), 4 << 26), (3, "ncclBroadcast", 1, 200 * US, 4096)],
    "stragglers": [(3, 5, 5, 1603000.0, 2 * MS), (1, 6, 1, 46 * US / 6, 10 * US),
                   (2, 5, 0, 18000.0, 20 * US), (0, 6, 0, 0.0, 0)],
    "arrival-spread": [(0x1234abcd5678ef00, i, "ncclAllReduce", 4, 2 * MS) for i in range(4)] +
                      [(0x1234abcd5678ef00, 4, "ncclBroadcast", 4, 15 * US),
                       (0x77, 0, "ncclRecv", 2, 1 * US)],
}


def rounded(rows):
    return [tuple(round(v, 3) if isinstance(v, float) else v for v in r) for r in rows]


def check_sqlite(tmp):
    r = run("export", "-F", "sqlite", "run.apx", cwd=tmp)
    check(r.returncode == 0, f"sqlite per rank: exit {r.returncode}: {r.stderr}")
    files = sorted(glob.glob(os.path.join(tmp, "run.rank*.sqlite")))
    if not check(len(files) == N, f"sqlite files {files}"):
        return
    for k, f in enumerate(files):
        db = sqlite3.connect(f)
        info = run("info", os.path.join(tmp, f"run.apx.rank{k}.{5000 + k}")).stdout
        recs = int(re.search(r"^  collective +\d+ +(\d+)", info, re.M).group(1))
        meta = dict(db.execute("SELECT key, value FROM META"))
        check(db.execute("SELECT COUNT(*) FROM NCCL_COLLECTIVES").fetchone()[0] == recs,
              f"rank {k}: NCCL_COLLECTIVES rows vs {recs} records")
        check(meta.get("rank") == str(k) and meta.get("world_size") == str(N) and
              meta.get("local_rank") == str(k % (N // 2)) and
              meta.get("run_start_utc_ns") == "1800000000000000000", f"rank {k}: META {meta}")
        joined = db.execute(
            "SELECT COUNT(*) FROM NCCL_COLLECTIVES AS c JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k ON "
            "k.correlationId = c.correlationId AND k.globalPid = c.globalPid JOIN StringIds AS s "
            "ON s.id = k.shortName WHERE s.value LIKE 'ncclKernel%' AND k.start <= c.start AND "
            "c.\"end\" <= k.\"end\"").fetchone()[0]
        check(joined == 4, f"rank {k}: {joined} collectives joined to their kernel")
        row = db.execute("SELECT e.label, a.label, p.label, d.name, printf('%016x', c.commId), "
                         "c.root, c.peer, c.streamId, c.start FROM NCCL_COLLECTIVES AS c "
                         "JOIN ENUM_NCCL_FUNC AS e ON e.id = c.func JOIN ENUM_NCCL_ALGO AS a ON "
                         "a.id = c.algo JOIN ENUM_NCCL_PROTO AS p ON p.id = c.proto JOIN "
                         "ENUM_NCCL_DATATYPE AS d ON d.id = c.datatype WHERE c.seq = 4").fetchone()
        check(row == ("Broadcast", "Ring", "LL", "ncclUint8", "1234abcd5678ef00", 0, None, None,
                      41100 * US), f"rank {k}: broadcast row {row}")
        db.close()
    blocks = doc_blocks()
    queries = {k[len("ranks-query: "):]: v for k, v in blocks.items() if k.startswith("ranks-query")}
    if not check("ranks-table" in blocks and "ranks-load" in blocks and
                 set(queries) == set(EXPECTED), f"docs/export.md blocks: {sorted(blocks)}"):
        return
    db = sqlite3.connect(":memory:")      # as docs/export.md does it
    db.execute(blocks["ranks-table"])
    for f in files:
        db.execute("ATTACH DATABASE ? AS r", (f,))
        db.execute(blocks["ranks-load"])
        db.commit()
        db.execute("DETACH DATABASE r")
    for name, sql in queries.items():
        got = rounded(db.execute(sql).fetchall())
        check(got == rounded(EXPECTED[name]), f"query {name}: {got}, want {EXPECTED[name]}")
    try:
        import pandas as pd
    except ImportError:
        print("export-ranks: pandas not installed: its form of the queries not run")
        return
    for name, sql in queries.items():
        df = pd.read_sql_query(sql, db)
        got = rounded([tuple(None if v != v else v for v in r)
                       for r in df.astype(object).itertuples(index=False)])
        check(got == rounded(EXPECTED[name]), f"pandas {name}: {got}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([gen, os.path.join(tmp, "run.apx"), str(N)], capture_output=True,
                           text=True)
        if not check(r.returncode == 0, f"ranks-gen: {r.stderr}"):
            return 1
        check_chrome(tmp)
        check_cli(tmp)
        if have_sqlite == "1":
            check_sqlite(tmp)
        else:
            print("export-ranks: apx built without libsqlite3: the SQLite checks not run")
    print(f"export-ranks: {len(fails)} failures")
    return 1 if fails else 0


sys.exit(main())
