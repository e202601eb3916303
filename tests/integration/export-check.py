"""export-check.py APX SRC - `apx export` on every committed real trace (tests/fixtures/real),
checked against what the traces hold and what the viewers need:

- chrome: valid JSON; every complete event has the fields Holistic Trace Analysis's parser
  requires (ts, dur, name, cat, pid, tid, args); kernels, copies and memsets carry stream,
  correlation and device; the counts per category equal the trace's record counts (apx info);
  events on one (pid, tid) never overlap partially; every flow end has its start; every
  "stream_wait" flow starts inside a GPU event 1 ns before its end and ends on a GPU event of
  another stream of the GPU that starts after it;
  distributedInfo with a rank and a world size in every file (HTA's rank scan); the GPU events of
  one stream on one tid unless two of them overlap by 1 us or more; every gpu_user_annotation on
  the (pid, tid) of the GPU work under it, as Kineto puts it; and HTA's attribution of kernels to
  annotations (breakdown_analysis.py, _associate_gpu_kernels_with_user_annotations, run on the
  export as HTA runs it with HTA_DISABLE_NS_ROUNDING=1) giving each GPU event the innermost NVTX
  range its launch lies in (tests/fixtures/real/nvtx_ranges.apx: every one of them);
- perfetto: decodes with protoc against tests/fixtures/perfetto/apx_subset.proto with no unknown
  field (when protoc is installed), and, with a wire-format reader of its own: every track is
  described before use and after its parent (a parent never described puts trace_processor's
  track under a nameless root), one thread track per (pid, tid), a tid above Linux's
  PID_MAX_LIMIT only on a track named as CUPTI's id, every counter track with the unit the
  Chrome export names (CounterDescriptor.unit for bytes, unit_name for "%", "W", ...), every
  SLICE_BEGIN has its SLICE_END on the same track in order, timestamps never go back, the
  slice counts equal the trace's record counts, and every stream wait flow (an id from 2^50 on)
  goes once out of one slice and into a later slice on another stream's track;
- cross-stream waits: tests/fixtures/suite/pageable_fixed.apx has as many stream wait
  flows in both exports as apx report's streams section counts (20), each from a copy on stream
  13 to a kernel on stream 7;
- the CLI: an existing output is not replaced without --force, --from/--to narrow the export,
  a missing folder is a clear error with exit 1;
- golden: both exports of a two-process run (tests/golden/export/) byte for byte
  (APX_UPDATE_GOLDEN=1 rewrites them).
Exit 0 when everything holds; prints one line per failure."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

apx, src = sys.argv[1], sys.argv[2]
fixtures = os.path.join(src, "tests", "fixtures", "real")
proto_dir = os.path.join(src, "tests", "fixtures", "perfetto")
tmp = tempfile.mkdtemp(prefix="apx-export-check-")
failures = []


def fail(what):
    failures.append(what)
    print("FAIL", what)


def record_counts(path):
    """Record counts per type from apx info's table."""
    out = subprocess.run([apx, "info", path], capture_output=True, text=True).stdout
    counts = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1].isdigit() and f[2].isdigit():
            counts[f[0]] = int(f[2])
    return counts


def export(fmt, path, out, *extra):
    return subprocess.run([apx, "export", "--format", fmt, "-o", out, *extra, path],
                          capture_output=True, text=True)


def check_chrome(name, out, counts):
    try:
        doc = json.load(open(out))
    except ValueError as e:
        fail(f"{name}: chrome export is not JSON: {e}")
        return None
    ev = doc.get("traceEvents")
    if not isinstance(ev, list):
        fail(f"{name}: no traceEvents list")
        return None
    cats = {}
    tracks = {}
    flows_s, flows_f = set(), set()
    for e in ev:
        ph = e.get("ph")
        if ph == "X":
            for k in ("ts", "dur", "name", "cat", "pid", "tid", "args"):
                if k not in e:
                    fail(f"{name}: complete event without '{k}': {str(e)[:120]}")
                    return None
            if "apx" in e["args"]:	# a collective no CUPTI kernel covers (NCCL plugin)
                continue
            cats[e["cat"]] = cats.get(e["cat"], 0) + 1
            if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"):
                for k in ("stream", "correlation", "device"):
                    if k not in e["args"]:
                        fail(f"{name}: {e['cat']} without args.{k}")
                        return None
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        elif ph == "s":
            flows_s.add(e["id"])
        elif ph == "f":
            flows_f.add(e["id"])
    want = {"kernel": counts.get("kernel", 0), "gpu_memcpy": counts.get("memcpy", 0),
            "gpu_memset": counts.get("memset", 0), "cuda_sync": counts.get("sync", 0)}
    for cat, n in want.items():
        if cats.get(cat, 0) != n:
            fail(f"{name}: chrome has {cats.get(cat, 0)} '{cat}' events, the trace {n}")
    api = cats.get("cuda_runtime", 0) + cats.get("cuda_driver", 0)
    if api != counts.get("api", 0):
        fail(f"{name}: chrome has {api} API events, the trace {counts.get('api', 0)}")
    for key, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s, e in spans:
            while stack and stack[-1] <= s + 1e-9:
                stack.pop()
            if stack and e > stack[-1] + 1e-9:
                fail(f"{name}: events overlap partially on pid {key[0]} tid {key[1]}")
                break
            stack.append(e)
    if flows_f - flows_s:
        fail(f"{name}: {len(flows_f - flows_s)} flow ends without a start")
    doc_waits = check_chrome_waits(name, ev)
    if "deviceProperties" not in doc:
        fail(f"{name}: no deviceProperties")
        return doc
    di = doc.get("distributedInfo")
    if not isinstance(di, dict) or not isinstance(di.get("rank"), int) or \
            not isinstance(di.get("world_size"), int):
        fail(f"{name}: no distributedInfo with a rank and a world size: {di}")
    check_streams(name, ev)
    check_annotations(name, ev)
    doc["apx_check_waits"] = doc_waits
    return doc


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def check_chrome_waits(name, ev):
    """Every stream wait flow: its start ("s") inside a GPU event 1 ns before that event's end,
    its end ("f", bp "e") inside a GPU event of another stream of the same GPU that starts at or
    after the first one's end. [((tid, cat) awaited, (tid, cat) waiting)] per flow."""
    gpu = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            gpu.setdefault((e["pid"], e["tid"]), []).append(e)

    def around(f):
        for x in gpu.get((f["pid"], f["tid"]), []):
            if x["ts"] - 1e-9 <= f["ts"] <= x["ts"] + x["dur"] + 1e-9:
                return x
        return None
    starts, ends = {}, {}
    for e in ev:
        if e.get("cat") == "stream_wait":
            if e.get("name") != "stream wait":
                fail(f"{name}: a stream_wait flow named {e.get('name')!r}")
            (starts if e["ph"] == "s" else ends).setdefault(e["id"], []).append(e)
    out = []
    if set(starts) != set(ends) or \
            any(len(v) != 1 for v in list(starts.values()) + list(ends.values())):
        fail(f"{name}: stream wait flows without one start and one end each")
        return out
    for i, (s,) in starts.items():
        f = ends[i][0]
        a, w = around(s), around(f)
        if a is None or w is None or f.get("bp") != "e":
            fail(f"{name}: stream wait flow {i} not on GPU events")
            continue
        if abs(a["ts"] + a["dur"] - 0.001 - s["ts"]) > 1e-6 and a["dur"] > 0.001:
            fail(f"{name}: stream wait flow {i} does not start at its event's end")
        if a["pid"] != w["pid"] or a["tid"] == w["tid"] or w["ts"] + 1e-6 < a["ts"] + a["dur"]:
            fail(f"{name}: stream wait flow {i}: from pid {a['pid']} tid {a['tid']} to pid "
                 f"{w['pid']} tid {w['tid']}, starting before the awaited event ends")
        out.append(((a["tid"], a["cat"]), (w["tid"], w["cat"])))
    return out


def check_streams(name, ev):
    """The GPU events of one stream share one tid (the stream's), unless two of them overlap by
    1 us or more: sub-microsecond overlaps of back-to-back kernels are trimmed, not moved to a
    lane that looks like a second stream."""
    by = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and "apx" not in e["args"]:
            by.setdefault((e["pid"], e["args"]["stream"]), []).append(e)
    for key, v in by.items():
        if len({e["tid"] for e in v}) == 1:
            continue
        v.sort(key=lambda e: e["ts"])
        big = any(a["ts"] + a["dur"] - b["ts"] >= 1.0 for a, b in zip(v, v[1:]))
        if not big:
            fail(f"{name}: stream {key} on several tids without an overlap of 1 us")


def check_annotations(name, ev):
    """Each gpu_user_annotation lies on the (pid, tid) of GPU work it holds, as Kineto writes
    them (on the kernels' stream)."""
    gpu = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            gpu.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for e in ev:
        if e.get("cat") != "gpu_user_annotation":
            continue
        lo, hi = e["ts"], e["ts"] + e["dur"]
        if not any(lo - 1e-6 <= a and b <= hi + 1e-6 for a, b in gpu.get((e["pid"], e["tid"]), [])):
            fail(f"{name}: gpu_user_annotation '{e['name']}' at {e['ts']} holds no GPU event "
                 f"of its pid {e['pid']} tid {e['tid']}")
            return


def hta_attribution(ev):
    """Holistic Trace Analysis's attribution of GPU kernels to GPU user annotations
    (facebookresearch/HolisticTraceAnalysis f4d0062, hta/analyzers/breakdown_analysis.py:
    _get_gpu_user_anno_interval_dataframe, _associate_gpu_kernels_with_user_annotations; the
    kernels of GPUKernelFilter, hta/common/trace_filter.py: stream >= 0 and correlation >= 0),
    in plain Python: annotations by duration, longest first; for each, every kernel on the same
    pid and tid whose [ts, end) overlaps the annotation's [ts, end) takes its name (here: its
    event), so the innermost annotation is the last to write. Times as HTA computes them
    (end = ts + dur in float microseconds) without its rounding of ns traces (what it does with
    HTA_DISABLE_NS_ROUNDING=1). Returns {id(kernel event): annotation event}."""
    annos = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_user_annotation"]
    annos.sort(key=lambda e: -e["dur"])
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("args", {}).get("stream", -1) >= 0
               and e.get("args", {}).get("correlation", -1) >= 0]
    by = {}
    for k in kernels:
        by.setdefault((k["pid"], k["tid"]), []).append(k)
    got = {}
    for a in annos:
        lo, hi = a["ts"], a["ts"] + a["dur"]
        for k in by.get((a["pid"], a["tid"]), []):
            if k["ts"] < hi and lo < k["ts"] + k["dur"]:
                got[id(k)] = a
    return got, kernels


def check_hta_attribution(name, ev, want_all):
    """HTA's attribution (above) against the trace: each GPU event goes to the innermost NVTX
    range of its process that its launch lies in (the API call's start through its flow, else
    its own start), and to none when no range holds its launch."""
    got, kernels = hta_attribution(ev)
    procs = {}
    for e in ev:
        if e.get("ph") == "M" and e.get("name") == "process_name" and "tid" not in e:
            procs[e["pid"]] = e["args"]["name"]
    ranges = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    starts = {e["id"]: e["ts"] for e in ev if e.get("ph") == "s"}
    launch_of = {(e["pid"], e["tid"], e["ts"]): starts.get(e["id"]) for e in ev if e.get("ph") == "f"}
    attributed = wrong = expected = 0
    for k in kernels:
        at = launch_of.get((k["pid"], k["tid"], k["ts"]))
        at = k["ts"] if at is None else at
        inner = None
        for r in ranges:	# the process is the range's; one process per file here
            if r["ts"] <= at < r["ts"] + r["dur"] and (inner is None or r["ts"] >= inner["ts"]):
                inner = r
        a = got.get(id(k))
        expected += inner is not None
        attributed += a is not None
        if (inner is None) != (a is None) or (a and a["args"].get("range id") != inner["args"].get("range id")):
            wrong += 1
    if wrong:
        fail(f"{name}: HTA attributes {wrong} of {len(kernels)} GPU events to another "
             f"annotation than the NVTX range they were launched in")
    if want_all and (not expected or attributed != expected):
        fail(f"{name}: HTA attributes {attributed} GPU events to annotations, {expected} were "
             f"launched inside NVTX ranges")
    return attributed, len(kernels)


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b, i, end):
    """(field, wiretype, value or (start, end)) of one message."""
    while i < end:
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
            yield f, wt, v
        elif wt == 1:
            yield f, wt, int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            n, i = varint(b, i)
            yield f, wt, (i, i + n)
            i += n
        else:
            raise ValueError(f"wire type {wt}")


PID_MAX_LIMIT = 4194304	# Linux: no tid is above it (CUPTI's pthread ids mostly are)


def check_descriptor(name, b, td, tracks, threads):
    """One TrackDescriptor: its parent described before it, one thread track per (pid, tid), a
    tid no OS gives only on a track named as CUPTI's id. Records it in tracks."""
    d = {"parent": None, "name": None, "thread": None, "counter": None}
    for df, dwt, v in fields(b, *td):
        if df == 1:
            d["uuid"] = v
        elif df == 2:
            d["name"] = b[v[0]:v[1]].decode()
        elif df == 5:
            d["parent"] = v
        elif df == 4:
            t = {}
            for tf, twt, tv in fields(b, *v):
                t[tf] = b[tv[0]:tv[1]].decode() if twt == 2 else tv
            d["thread"] = t
        elif df == 8:
            c = {}
            for cf, cwt, cv in fields(b, *v):
                c[cf] = b[cv[0]:cv[1]].decode() if cwt == 2 else cv
            d["counter"] = c
    if d["parent"] is not None and d["parent"] not in tracks:
        fail(f"{name}: track {d.get('uuid')} ({d['name']}) has parent {d['parent']}, "
             "not described before it")
    t = d["thread"]
    if t:
        key = (t.get(1), t.get(2))
        if key in threads:
            fail(f"{name}: two thread tracks for pid {key[0]} tid {key[1]}")
        threads.add(key)
        if (t.get(2) or 0) > PID_MAX_LIMIT and "(CUPTI id)" not in t.get(5, ""):
            fail(f"{name}: thread track with tid {t.get(2)} (not an OS tid) not named as "
                 f"CUPTI's id: {t.get(5)!r}")
    tracks[d.get("uuid")] = d


def check_units(name, tracks, chrome):
    """Each counter track's unit: bytes as CounterDescriptor.unit UNIT_SIZE_BYTES, any other
    unit the trace names (the Chrome export's argument key) as unit_name."""
    keys = {}
    for e in (chrome or {}).get("traceEvents", []):
        if e.get("ph") == "C":
            keys[e["name"]] = next(iter(e["args"]))
    for d in tracks.values():
        c = d["counter"]
        if c is None or d["name"] not in keys:
            continue
        k = keys[d["name"]]
        if k in ("bytes", "B"):
            ok = c.get(3) == 3
        elif k == "value":	# no unit in the trace
            ok = 3 not in c and 6 not in c
        else:
            ok = c.get(6) == k
        if not ok:
            fail(f"{name}: counter '{d['name']}' in {k!r} has CounterDescriptor {c}")


WAIT_FLOW_BASE = 1 << 50	# walk.h's APX_WK_WAIT_FLOW_BASE: stream wait flow ids above it


def check_perfetto(name, out, counts, chrome=None, waits=None):
    """waits (a list): gets (awaited track name, waiting track name) per stream wait flow."""
    b = open(out, "rb").read()
    flow_out, flow_in = {}, {}
    if subprocess.run(["which", "protoc"], capture_output=True).returncode == 0:
        p = subprocess.run(["protoc", "--decode=apxtest.Trace", "-I", proto_dir,
                            "apx_subset.proto"], input=b, capture_output=True)
        if p.returncode != 0:
            fail(f"{name}: protoc cannot decode the perfetto export: {p.stderr[:200]}")
        elif any(line.strip()[:1].isdigit() for line in p.stdout.decode(errors="replace").splitlines()):
            fail(f"{name}: the perfetto export has fields apx_subset.proto does not name")
    declared, open_slices = set(), {}
    tracks, threads = {}, set()
    begins = ends = 0
    last_ts = 0
    for f, wt, span in fields(b, 0, len(b)):
        if f != 1 or wt != 2:
            fail(f"{name}: a Trace field other than packet")
            return
        ts, te, td = None, None, None
        for pf, pwt, v in fields(b, *span):
            if pf == 8:
                ts = v
            elif pf == 11:
                te = v
            elif pf == 60:
                td = v
        if td:
            check_descriptor(name, b, td, tracks, threads)
            for df, _, v in fields(b, *td):
                if df == 1:
                    declared.add(v)
        if te:
            typ = track = None
            fo, fi = [], []
            for ef, _, v in fields(b, *te):
                if ef == 9:
                    typ = v
                elif ef == 11:
                    track = v
                elif ef == 47 and v > WAIT_FLOW_BASE:
                    fo.append(v)
                elif ef == 48 and v > WAIT_FLOW_BASE:
                    fi.append(v)
            for v in fo:
                flow_out.setdefault(v, []).append((track, ts))
            for v in fi:
                flow_in.setdefault(v, []).append((track, ts))
            if track not in declared:
                fail(f"{name}: an event on track {track} before its descriptor")
                return
            if ts is None or ts < last_ts:
                fail(f"{name}: timestamps go back ({ts} after {last_ts})")
                return
            last_ts = ts
            if typ == 1:
                begins += 1
                open_slices[track] = open_slices.get(track, 0) + 1
            elif typ == 2:
                ends += 1
                if not open_slices.get(track):
                    fail(f"{name}: SLICE_END without a SLICE_BEGIN on track {track}")
                    return
                open_slices[track] -= 1
    if begins != ends or any(open_slices.values()):
        fail(f"{name}: {begins} slice begins, {ends} ends")
    if set(flow_out) != set(flow_in) or \
            any(len(v) != 1 for v in list(flow_out.values()) + list(flow_in.values())):
        fail(f"{name}: perfetto stream wait flows without one start and one end each")
    else:
        for i, [(ta, sa)] in flow_out.items():
            [(tw, sw)] = flow_in[i]
            if ta == tw or sw <= sa:
                fail(f"{name}: perfetto stream wait flow {i} on one track or going back")
            elif waits is not None:
                waits.append((tracks[ta]["name"], tracks[tw]["name"]))
    gpu = counts.get("kernel", 0) + counts.get("memcpy", 0) + counts.get("memset", 0)
    host = counts.get("api", 0) + counts.get("sync", 0)
    if begins < gpu + host:
        fail(f"{name}: {begins} slices for {gpu} GPU and {host} host records")
    check_units(name, tracks, chrome)


n = 0
for f in sorted(os.listdir(fixtures)):
    if not f.endswith(".apx"):
        continue
    path = os.path.join(fixtures, f)
    counts = record_counts(path)
    doc = None
    for fmt in ("chrome", "perfetto"):
        out = os.path.join(tmp, f"{f}.{fmt}")
        p = export(fmt, path, out, "--single")	# this file's records only
        # a crashed producer's trace lacks its end chunk: exported whole, exit 1 as apx info
        truncated = p.returncode == 1 and ": truncated: " in p.stderr and os.path.exists(out)
        if p.returncode != 0 and not truncated:
            fail(f"{f}: apx export --format {fmt} exit {p.returncode}: {p.stderr[-300:]}")
            continue
        if fmt == "chrome":
            doc = check_chrome(f, out, counts)
        else:
            check_perfetto(f, out, counts, doc)
    if doc:
        got, of = check_hta_attribution(f, doc["traceEvents"], f == "nvtx_ranges.apx")
        if f == "nvtx_ranges.apx":
            print(f"export-check: {f}: HTA attributes {got} of {of} GPU events to NVTX ranges")
    n += 1

# cross-stream waits: one flow per wait apx report counts, from stream 13's copies
# to stream 7's kernels, in both exports
pf = os.path.join(src, "tests", "fixtures", "suite", "pageable_fixed.apx")
rep = subprocess.run([apx, "report", pf, "--section", "streams"], capture_output=True, text=True)
want = sum(int(line.split(":")[1].split()[0]) for line in rep.stdout.splitlines()
           if "waited for stream" in line)
pf_counts = record_counts(pf)
out = os.path.join(tmp, "waits.json")
p = export("chrome", pf, out)
doc = check_chrome("pageable_fixed.apx", out, pf_counts) if p.returncode == 0 else None
got = doc["apx_check_waits"] if doc else []
if want != 20 or len(got) != want or any(w != ((13, "gpu_memcpy"), (7, "kernel")) for w in got):
    fail(f"pageable_fixed.apx: chrome has {len(got)} stream wait flows, apx report counts "
         f"{want} (20 expected), not all from stream 13's copies to stream 7's kernels")
pw = []
if export("perfetto", pf, os.path.join(tmp, "waits.pftrace")).returncode == 0:
    check_perfetto("pageable_fixed.apx", os.path.join(tmp, "waits.pftrace"), pf_counts, doc, pw)
if len(pw) != want or any(not (a.startswith("stream 13 ") and w.startswith("stream 7 "))
                          for a, w in pw):
    fail(f"pageable_fixed.apx: perfetto has {len(pw)} stream wait flows for {want} waits, "
         f"or not from stream 13 to stream 7: {pw[:2]}")
else:
    print(f"export-check: pageable_fixed.apx: {want} stream wait flows in both exports")

# the command line
lb = os.path.join(fixtures, "launch_bound.apx")
out = os.path.join(tmp, "again.json")
export("chrome", lb, out)
p = export("chrome", lb, out)
if p.returncode != 2 or "exists" not in p.stderr:
    fail(f"an existing output was not refused: exit {p.returncode} {p.stderr.strip()}")
if export("chrome", lb, out, "--force").returncode != 0:
    fail("--force did not replace the output")
narrow = os.path.join(tmp, "narrow.json")
p = export("chrome", lb, narrow, "--from", "0.35", "--to", "0.36")
full = json.load(open(out))["traceEvents"]
part = json.load(open(narrow))["traceEvents"] if p.returncode == 0 else []
kx = lambda ev: [e for e in ev if e.get("cat") == "kernel"]
if not (0 < len(kx(part)) < len(kx(full))):
    fail(f"--from/--to kept {len(kx(part))} of {len(kx(full))} kernels")
p = export("chrome", lb, os.path.join(tmp, "no", "such", "dir.json"))
if p.returncode != 1 or "cannot write" not in p.stderr:
    fail(f"a missing folder: exit {p.returncode}, {p.stderr.strip()[:200]}")
if os.path.exists(os.path.join(tmp, "no")):
    fail("a failed export left something behind")

# FILE brings its run's FILE.<pid> along (and --single does not)
fs = os.path.join(fixtures, "fork_and_subprocess.apx")
p1 = export("chrome", fs, os.path.join(tmp, "fs-auto.json"))
p2 = export("chrome", fs, os.path.join(tmp, "fs-single.json"), "--single")
pids = lambda f: {e["pid"] for e in json.load(open(f))["traceEvents"] if e.get("ph") == "M"
                  and e.get("name") == "process_name" and e["pid"] > 100}
if p1.returncode or p2.returncode:
    fail(f"export of a run: exit {p1.returncode} / {p2.returncode}")
elif len(pids(os.path.join(tmp, "fs-auto.json"))) != 2 or len(pids(os.path.join(tmp, "fs-single.json"))) != 1:
    fail("FILE did not bring its FILE.<pid> (or --single did not keep it out)")

# golden exports of a two-process run (both processes on one GPU): byte for byte
golden = os.path.join(src, "tests", "golden", "export")
pair = ["tests/fixtures/real/fork_and_subprocess.apx", "tests/fixtures/real/fork_and_subprocess.apx.979"]
for fmt, name in (("chrome", "fork_and_subprocess.json"), ("perfetto", "fork_and_subprocess.perfetto-trace")):
    out = os.path.join(tmp, name)
    p = subprocess.run([apx, "export", "--format", fmt, "-o", out] + pair, cwd=src,
                       capture_output=True, text=True)
    want = os.path.join(golden, name)
    if p.returncode != 0:
        fail(f"golden {name}: exit {p.returncode}: {p.stderr[-200:]}")
    elif os.environ.get("APX_UPDATE_GOLDEN"):
        os.makedirs(golden, exist_ok=True)
        open(want, "wb").write(open(out, "rb").read())
    elif not os.path.exists(want) or open(want, "rb").read() != open(out, "rb").read():
        fail(f"golden {name}: the export differs from {want} (APX_UPDATE_GOLDEN=1 to accept)")

shutil.rmtree(tmp, ignore_errors=True)
print(f"export-check: {n} traces, {len(failures)} failures")
sys.exit(1 if failures else 0)
