#!/usr/bin/env python3
"""export-sqlite.py - `apx export --format sqlite`, checked with python3's sqlite3 module:
every committed real trace (tests/fixtures/real) exported, its row counts equal to the record
counts `apx info` reads from the file and its kernel time equal to what `apx report --format
json` says; a trace whose every number is known (export-gen) exported and each example query
of docs/export.md run on it against the exact answer (and, where the real traces have the
data, against `apx report`); the schema in docs/export.md equal to the database's; bad output
paths, an existing output and --from/--to. Built without libsqlite3, it checks that the format
says it is not built in. Called by ctest: APX EXPORT_GEN SRCDIR HAVE_SQLITE (1 or 0).
"""
import datetime
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

apx, gen, src, have = sys.argv[1:5]
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
    return ok


def run(*args):
    return subprocess.run([apx, *args], capture_output=True, text=True)


def export(trace, out, *extra):
    r = run("export", "--format", "sqlite", "-o", out, *extra, trace)
    # a crashed producer's trace lacks its end chunk: exported whole, exit 1 as apx info
    ok = r.returncode == 0 or (r.returncode == 1 and ": truncated: " in r.stderr and
                               os.path.exists(out))
    check(ok, f"export {os.path.basename(trace)}: exit {r.returncode}: {r.stderr}")
    return sqlite3.connect(out) if ok else None


def count(db, table):
    return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def info_counts(trace):
    """Record counts per type, as `apx info` reads them from the file."""
    out = run("info", trace).stdout
    return {m[0]: int(m[1]) for m in re.findall(r"^  (\w+) +\d+ +(\d+) +\d+", out, re.M)}


def doc_blocks():
    text = open(os.path.join(src, "docs", "export.md")).read()
    blocks = re.findall(r"```sql\n(.*?)```", text, re.S)
    queries = {}
    for b in blocks:
        m = re.match(r"-- query: (\S+)\n", b)
        if m:
            queries[m.group(1)] = b
    schema = [b for b in blocks if b.startswith("CREATE TABLE META")]
    return queries, schema[0] if schema else ""


TABLES = {  # apx info record type -> table holding one row per record
    "kernel": "CUPTI_ACTIVITY_KIND_KERNEL",
    "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
    "memset": "CUPTI_ACTIVITY_KIND_MEMSET",
    "api": "CUPTI_ACTIVITY_KIND_RUNTIME",
    "marker": "NVTX_EVENTS",
    "sync": "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
}


def realtime_offset_ns(trace):
    """The header's wall-clock offset, as `apx info` prints it (wall = trace + offset)."""
    m = re.search(r"wall time = trace time ([+-]) (\d+)\.(\d{9}) s", run("info", trace).stdout)
    if not m:
        return None
    ns = int(m.group(2)) * 10**9 + int(m.group(3))
    return -ns if m.group(1) == "-" else ns


def nsys_tables(db, name, trace):
    """What nsys's tools probe: the export schema version, the session start, the
    host, the devices of each process, every globalTid a THREADS row, GPU metrics as
    GPU_METRICS, graph ids paired."""
    one = lambda sql: db.execute(sql).fetchone()
    v = db.execute("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"
                   ).fetchall()
    check(len(v) == 1 and re.fullmatch(r"3\.\d+\.\d+", v[0][0] or ""),
          f"{name}: EXPORT_SCHEMA_VERSION {v}")
    meta = dict(db.execute("SELECT key, value FROM META WHERE key LIKE 'run_start%'"))
    rows = db.execute("SELECT utcEpochNs, utcTime, localTime, systemClockNs FROM "
                      "TARGET_INFO_SESSION_START_TIME").fetchall()
    off = realtime_offset_ns(trace)
    if check(len(rows) == 1 and off is not None, f"{name}: session start {rows}, offset {off}"):
        utc, utext, ltext, sysns = rows[0]
        secs = datetime.datetime.fromtimestamp(utc // 10**9, datetime.timezone.utc)
        want = secs.strftime("%Y-%m-%dT%H:%M:%S") + ".%09d" % (utc % 10**9)
        check(sysns == int(meta["run_start_ns"]) and utc == sysns + off and
              utc == int(meta["run_start_utc_ns"]) and utext == want + "Z" and
              ltext == want + "+00:00",
              f"{name}: session start {rows[0]}: not the trace's realtime start "
              f"({meta}, offset {off})")
    check(one("SELECT COUNT(*) FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' AND "
              "value = (SELECT host FROM PROCESSES LIMIT 1)") == (1,), f"{name}: Hostname")
    bad = one("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN PROCESSES p ON "
              "p.globalPid = k.globalPid LEFT JOIN TARGET_INFO_CUDA_DEVICE d ON "
              "d.cudaId = k.deviceId AND d.pid = p.pid WHERE d.pid IS NULL")[0]
    check(bad == 0, f"{name}: {bad} kernels without their TARGET_INFO_CUDA_DEVICE row")
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                  "NVTX_EVENTS", "ThreadNames", "COMPOSITE_EVENTS"):
        bad = one(f"SELECT COUNT(*) FROM {table} e LEFT JOIN THREADS t USING (globalTid) "
                  "WHERE e.globalTid IS NOT NULL AND t.globalTid IS NULL")[0]
        check(bad == 0, f"{name}: {bad} {table} rows whose globalTid is not in THREADS")
    # the nsys recipe decodes the tid; a thread known by its OS tid is not there twice
    check(one("SELECT COUNT(*) FROM THREADS WHERE globalTid < 0x4000000000000000 AND "
              "globalTid % 0x1000000 != tid % 0x1000000") == (0,), f"{name}: THREADS tid")
    n = one("SELECT COUNT(*) FROM COUNTER_EVENTS e JOIN COUNTER_SERIES s ON s.id = e.seriesId "
            "WHERE s.deviceId IS NOT NULL AND s.name != 'device memory'")[0]
    got = one("SELECT COUNT(*), COUNT(i.metricName) FROM GPU_METRICS m LEFT JOIN "
              "TARGET_INFO_GPU_METRICS i USING (typeId, metricId) JOIN TARGET_INFO_GPU g ON "
              "g.id = m.typeId & 0xff")
    check(got == (n, n), f"{name}: GPU_METRICS {got}, device metric samples {n}")
    check(one("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "
              "(graphId IS NULL) != (graphNodeId IS NULL)") == (0,), f"{name}: graph ids")
    return n, one("SELECT COUNT(graphId) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]


GRAPHS = {  # traces of CUDA graphs: kernels with a graph id, distinct graphs
    "real/launch_bound_fixed.apx": (20000, 1),
    "suite/launch_bound_fixed.apx": (4480, 1),
    "suite/graph_recapture_fixed.apx": (560, 1),
}
METRICS = {  # traces with NVML readings or PM sampling: GPU_METRICS rows
    "real/nvperfd_pageable.apx": 45,
    "real/nvperfd_pinned.apx": 30,
    "suite/copy_overlap_fixed.apx": 116,
    "hwc/throughput.apx": 53892,
}


def nsys_traces(tmp):
    """Graph ids and GPU metrics on the traces that have them; none elsewhere."""
    fx = os.path.join(src, "tests/fixtures")
    for rel in sorted(set(GRAPHS) | set(METRICS)):
        t = os.path.join(fx, rel)
        db = export(t, os.path.join(tmp, rel.replace("/", "-") + ".sqlite"), "--single")
        if not db:
            continue
        metrics, graphs = nsys_tables(db, rel, t)
        want = GRAPHS.get(rel, (0, 0))
        got = (graphs, db.execute("SELECT COUNT(DISTINCT graphId) FROM "
                                  "CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
        check(got == want, f"{rel}: graph kernels, graphs {got}, want {want}")
        check(metrics == METRICS.get(rel, 0), f"{rel}: {metrics} GPU_METRICS rows, want "
              f"{METRICS.get(rel, 0)}")
        db.close()


def real_traces(tmp):
    traces = sorted(glob.glob(os.path.join(src, "tests/fixtures/real/*.apx*")))
    check(len(traces) >= 20, f"only {len(traces)} real traces")
    for t in traces:
        name = os.path.basename(t)
        db = export(t, os.path.join(tmp, name + ".sqlite"), "--single")
        if not db:
            continue
        want = info_counts(t)
        for rec, table in TABLES.items():
            got = count(db, table)
            check(got == want.get(rec, 0), f"{name}: {table} has {got} rows, the file "
                  f"{want.get(rec, 0)} {rec} records")
        rep = json.loads(run("report", "--single", "--format", "json", t).stdout)["run"]
        kt = db.execute("SELECT COALESCE(SUM(end - start), 0) FROM "
                        "CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        check(kt == rep["kernel_time_ns"], f"{name}: kernel time {kt} ns, apx report "
              f"{rep['kernel_time_ns']} ns")
        check(count(db, "PROCESSES") >= 1, f"{name}: no process")
        bad = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN "
                         "TARGET_INFO_GPU g ON g.id = k.deviceId LEFT JOIN StringIds s "
                         "ON s.id = k.shortName WHERE g.id IS NULL OR s.id IS NULL").fetchone()[0]
        check(bad == 0, f"{name}: {bad} kernels without their GPU or name")
        pids = db.execute("SELECT DISTINCT globalTid / 0x1000000 % 0x1000000 FROM THREADS "
                          "UNION SELECT DISTINCT globalPid / 0x1000000 % 0x1000000 FROM "
                          "CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
        known = {r[0] for r in db.execute("SELECT pid FROM PROCESSES")}
        check({p[0] for p in pids} <= known, f"{name}: globalPid/globalTid do not decode to "
              f"the pids of PROCESSES")
        metrics, graphs = nsys_tables(db, name, t)
        want = (GRAPHS.get("real/" + name, (0, 0))[0], METRICS.get("real/" + name, 0))
        check((graphs, metrics) == want, f"{name}: graph kernels, GPU_METRICS rows "
              f"{(graphs, metrics)}, want {want}")
        db.close()
    # a run of two processes: FILE brings FILE.<pid>, each with its file index in globalPid
    t = os.path.join(src, "tests/fixtures/real/fork_and_subprocess.apx")
    db = export(t, os.path.join(tmp, "two.sqlite"))
    if db:
        want = [info_counts(f).get("kernel", 0) for f in (t, t + ".979")]
        got = db.execute("SELECT globalPid >> 48, globalPid / 0x1000000 % 0x1000000, COUNT(*) "
                         "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1 ORDER BY 1").fetchall()
        procs = db.execute("SELECT globalPid >> 48, pid FROM PROCESSES ORDER BY 1").fetchall()
        check(len(procs) == 2 and [(g[0], g[1]) for g in got] == procs and
              [g[2] for g in got] == want, f"two processes: kernels {got}, processes {procs}, "
              f"want {want}")
        db.close()
    return len(traces)


EXPECTED = {  # on the export-gen trace
    "top-kernels": [("Kernel2", 2, 10000, 5000.0), ("reduce_kernel", 3, 3000, 1000.0),
                    ("triton_poi_fused_add_0", 1, 2000, 2000.0)],
    "kernel-launches": [(10500, "cudaLaunchKernel", "Kernel2", 500, 5000),
                        (16500, "cudaLaunchKernel", "Kernel2", 500, 5000),
                        (22500, "cudaLaunchKernel", "reduce_kernel", 500, 1000),
                        (24500, "cudaLaunchKernel", "reduce_kernel", 500, 1000),
                        (26500, "cudaLaunchKernel", "reduce_kernel", 500, 1000),
                        (29500, "cuLaunchKernel", "triton_poi_fused_add_0", 500, 2000)],
    "copies": [("Host-to-Device", "Pinned", "Device", 1, 2097152, 100000, 20.97152),
               ("Device-to-Host", "Device", "Pinned", 1, 1048576, 50000, 20.97152),
               ("Host-to-Device", "Pageable", "Device", 1, 1048576, 100000, 10.48576)],
    "nvtx-ranges": [("step", 2, 200000, 100000.0, 100000), ("forward", 1, 30000, 30000.0, 30000)],
    # the Python stacks' queries: no stacks in this trace (export-stacks.py checks them on one)
    "top-lines-gpu": [],
    "gpu-under-line": [],
    "sample-lines": [],
}


def known_trace(tmp, queries, schema):
    trace = os.path.join(tmp, "known.apx")
    r = subprocess.run([gen, trace], capture_output=True, text=True)
    if not check(r.returncode == 0, f"export-gen: {r.stderr}"):
        return
    db = export(trace, os.path.join(tmp, "known.sqlite"))
    if not db:
        return
    check(set(queries) == set(EXPECTED), f"docs/export.md queries {sorted(queries)}, the test "
          f"knows {sorted(EXPECTED)}")
    for name, sql in queries.items():
        try:
            rows = db.execute(sql).fetchall()
        except sqlite3.Error as e:
            check(False, f"query {name}: {e}")
            continue
        want = EXPECTED.get(name)
        check(want is None or [tuple(round(v, 6) if isinstance(v, float) else v for v in row)
                               for row in rows] == want,
              f"query {name}: {rows}, want {want}")
    got = "\n\n".join(s + ";" for (s,) in db.execute(
        "SELECT sql FROM sqlite_master WHERE sql NOT NULL ORDER BY rowid"))
    check(got.strip() == schema.strip(), "docs/export.md's schema differs from the database's:\n"
          + got)
    one = lambda sql: db.execute(sql).fetchone()
    check(one("SELECT pid, ppid, rank, host, argv FROM PROCESSES") ==
          (4242, 1, 0, "node1", "python3 train.py"), "PROCESSES row")
    # API and NVTX records name the thread by CUPTI's id: the stream sync pairs it with 4242
    check(one("SELECT COUNT(*), MIN(globalTid / 0x1000000 % 0x1000000), MIN(globalTid % 0x1000000)"
              ", MAX(globalTid % 0x1000000) FROM CUPTI_ACTIVITY_KIND_RUNTIME") ==
          (11, 4242, 4242, 4242), "RUNTIME globalTid: the OS tid")
    check(db.execute("SELECT DISTINCT t.tid, t.name FROM NVTX_EVENTS n JOIN THREADS t USING "
                     "(globalTid)").fetchall() == [(4242, "python3")], "NVTX globalTid")
    check(db.execute("SELECT tid FROM THREADS ORDER BY tid").fetchall() == [(4242,), (4250,)],
          "THREADS: no row for CUPTI's id of 4242")
    nsys_tables(db, "known", trace)
    check(one("SELECT COUNT(*) FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId AND "
              "s.value = 'pt_autograd_0' AND t.globalTid % 0x1000000 = 4250") == (1,),
          "ThreadNames")
    check(one("SELECT eventClass, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1")
          == (1, 1), "one driver call (eventClass 1)")
    check(one("SELECT value, start, end FROM NVTX_EVENTS JOIN StringIds ON id = textId WHERE "
              "eventType = 34") == ("checkpoint", 150000, None), "NVTX mark")
    check(db.execute("SELECT syncType, streamId, end - start FROM "
                     "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY start").fetchall() ==
          [(3, 7, 2000), (4, None, 5000)], "syncs")
    check(one("SELECT bytes, end - start, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET") ==
          (4096, 1000, 111), "memset")
    check(db.execute("SELECT e.ts, e.value FROM COUNTER_EVENTS e JOIN COUNTER_SERIES s ON "
                     "s.id = e.seriesId AND s.name = 'device memory' ORDER BY e.ts").fetchall()
          == [(1000, 1048576.0), (190000, 0.0)], "device memory counter")
    check(one("SELECT id, name, uuid, smCount, computeMajor, host FROM TARGET_INFO_GPU") ==
          (0, "NVIDIA H200", "GPU-c39704c6-151c-ae1e-5e5a-ac5cf5c93cbf", 132, 9, "node1"),
          "TARGET_INFO_GPU")
    check(one("SELECT value FROM META WHERE key = 'input'") == (trace,), "META input")
    check(one("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON "
              "s.id = k.demangledName LIMIT 1")[0].startswith("void cutlass::Kernel2<"),
          "demangledName")
    db.close()

    # --from/--to keep what overlaps [100 us, 150 us): no kernel, the three copies
    db = export(trace, os.path.join(tmp, "window.sqlite"), "--from", "0.0001", "--to", "0.00015")
    if db:
        check((count(db, "CUPTI_ACTIVITY_KIND_KERNEL"), count(db, "CUPTI_ACTIVITY_KIND_MEMCPY"))
              == (0, 3), "--from/--to")
        db.close()
    # output paths
    r = run("export", "-F", "sqlite", "-o", os.path.join(tmp, "none", "x.sqlite"), trace)
    check(r.returncode == 1 and "cannot write" in r.stderr and
          "its folder does not exist" in r.stderr, f"missing folder: {r.returncode} {r.stderr}")
    ro = os.path.join(tmp, "ro")
    os.mkdir(ro, 0o555)
    # root writes into a mode-555 folder anyway; sysfs refuses even root
    out = os.path.join(ro, "x.sqlite") if os.geteuid() else "/sys/kernel/apx-export-test.sqlite"
    r = run("export", "-F", "sqlite", "-o", out, trace)
    check(r.returncode == 1 and "cannot write" in r.stderr and "Permission denied" in r.stderr,
          f"read-only folder: {r.returncode} {r.stderr}")
    r = run("export", "-F", "sqlite", "-o", os.path.join(tmp, "known.sqlite"), trace)
    check(r.returncode == 2 and "exists" in r.stderr, f"existing output: {r.returncode} {r.stderr}")
    r = run("export", "-F", "sqlite", "--force", "-o", os.path.join(tmp, "known.sqlite"), trace)
    check(r.returncode == 0, f"--force: {r.returncode} {r.stderr}")
    check(not glob.glob(os.path.join(tmp, ".*apx-tmp-*")), "temporary files left behind")


def queries_on_real(tmp, queries):
    """The example queries agree with apx report on the real traces that have the data."""
    fx = os.path.join(src, "tests/fixtures/real")
    for name, fixture in (("top-kernels", "nvtx_ranges.apx"), ("nvtx-ranges", "nvtx_ranges.apx"),
                          ("copies", "pageable_h2d.apx")):
        t = os.path.join(fx, fixture)
        db = sqlite3.connect(os.path.join(tmp, fixture + ".sqlite"))
        rep = json.loads(run("report", "--single", "--format", "json", t).stdout)
        rows = db.execute(queries[name]).fetchall()
        if name == "top-kernels":
            want = sorted(k["total_ns"] for k in rep["kernels"])
            check(sorted(r[2] for r in rows) == want, f"{fixture}: top-kernels {rows} vs {want}")
            # base names past return types, scopes, "(anonymous namespace)" and templates
            names = {"Kernel2", "elementwise_kernel", "reduce_kernel",
                     "distribution_elementwise_grid_stride_kernel"}
            check({r[0] for r in rows} == names, f"{fixture}: shortName {rows}")
        elif name == "nvtx-ranges":
            want = [(n["name"], n["count"], n["wall_ns"]) for n in rep["nvtx"]]
            check([r[:3] for r in rows] == want, f"{fixture}: nvtx-ranges {rows} vs {want}")
        else:
            f = rep["files"][0]
            check((sum(r[4] for r in rows), sum(r[5] for r in rows)) ==
                  (f["copy_bytes"], f["copy_time_ns"]), f"{fixture}: copies {rows} vs {f}")
        db.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(src, "tests/fixtures/real/nvtx_ranges.apx")
        if have != "1":
            r = run("export", "--format", "sqlite", "-o", os.path.join(tmp, "x.sqlite"), trace)
            check(r.returncode == 1 and "not built into this apx" in r.stderr,
                  f"without libsqlite3: exit {r.returncode}: {r.stderr}")
            check(not os.listdir(tmp), "without libsqlite3: a file was written")
        else:
            queries, schema = doc_blocks()
            n = real_traces(tmp)
            nsys_traces(tmp)
            known_trace(tmp, queries, schema)
            if set(queries) >= {"top-kernels", "nvtx-ranges", "copies"}:
                queries_on_real(tmp, queries)
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print("export-sqlite: " + ("the format says it is not built in" if have != "1" else
              f"{n} real traces and the known trace exported; counts, kernel time, "
              f"{len(EXPECTED)} documented queries and the schema as expected"))
    return 1 if fails else 0


sys.exit(main())
