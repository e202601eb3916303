"""export-check.py APX SRC - `apx export` on every committed real trace (tests/fixtures/real),
checked against what the traces hold and what the viewers need:

- chrome: valid JSON; every complete event has the fields Holistic Trace Analysis's parser
  requires (ts, dur, name, cat, pid, tid, args); kernels, copies and memsets carry stream,
  correlation and device; the counts per category equal the trace's record counts (apx info);
  events on one (pid, tid) never overlap partially; every flow end has its start;
- perfetto: decodes with protoc against tests/fixtures/perfetto/apx_subset.proto with no unknown
  field (when protoc is installed), and, with a wire-format reader of its own: every track is
  described before use, every SLICE_BEGIN has its SLICE_END on the same track in order,
  timestamps never go back, and the slice counts equal the trace's record counts;
- the CLI: an existing output is not replaced without --force, --from/--to narrow the export,
  a missing folder is a clear error with exit 1;
- golden: both exports of a two-process run (tests/golden/export/) byte for byte
  (APX_UPDATE_GOLDEN=1 rewrites them).
Exit 0 when everything holds; prints one line per failure."""
import json
import os
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
        return
    ev = doc.get("traceEvents")
    if not isinstance(ev, list):
        fail(f"{name}: no traceEvents list")
        return
    cats = {}
    tracks = {}
    flows_s, flows_f = set(), set()
    for e in ev:
        ph = e.get("ph")
        if ph == "X":
            for k in ("ts", "dur", "name", "cat", "pid", "tid", "args"):
                if k not in e:
                    fail(f"{name}: complete event without '{k}': {str(e)[:120]}")
                    return
            if "apx" in e["args"]:	# a collective no CUPTI kernel covers (NCCL plugin)
                continue
            cats[e["cat"]] = cats.get(e["cat"], 0) + 1
            if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"):
                for k in ("stream", "correlation", "device"):
                    if k not in e["args"]:
                        fail(f"{name}: {e['cat']} without args.{k}")
                        return
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
    if "deviceProperties" not in doc:
        fail(f"{name}: no deviceProperties")


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


def check_perfetto(name, out, counts):
    b = open(out, "rb").read()
    if subprocess.run(["which", "protoc"], capture_output=True).returncode == 0:
        p = subprocess.run(["protoc", "--decode=apxtest.Trace", "-I", proto_dir,
                            "apx_subset.proto"], input=b, capture_output=True)
        if p.returncode != 0:
            fail(f"{name}: protoc cannot decode the perfetto export: {p.stderr[:200]}")
        elif any(line.strip()[:1].isdigit() for line in p.stdout.decode(errors="replace").splitlines()):
            fail(f"{name}: the perfetto export has fields apx_subset.proto does not name")
    declared, open_slices = set(), {}
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
            for df, _, v in fields(b, *td):
                if df == 1:
                    declared.add(v)
        if te:
            typ = track = None
            for ef, _, v in fields(b, *te):
                if ef == 9:
                    typ = v
                elif ef == 11:
                    track = v
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
    gpu = counts.get("kernel", 0) + counts.get("memcpy", 0) + counts.get("memset", 0)
    host = counts.get("api", 0) + counts.get("sync", 0)
    if begins < gpu + host:
        fail(f"{name}: {begins} slices for {gpu} GPU and {host} host records")


n = 0
for f in sorted(os.listdir(fixtures)):
    if not f.endswith(".apx"):
        continue
    path = os.path.join(fixtures, f)
    counts = record_counts(path)
    for fmt, check in (("chrome", check_chrome), ("perfetto", check_perfetto)):
        out = os.path.join(tmp, f"{f}.{fmt}")
        p = export(fmt, path, out, "--single")	# this file's records only
        # a crashed producer's trace lacks its end chunk: exported whole, exit 1 as apx info
        truncated = p.returncode == 1 and ": truncated: " in p.stderr and os.path.exists(out)
        if p.returncode != 0 and not truncated:
            fail(f"{f}: apx export --format {fmt} exit {p.returncode}: {p.stderr[-300:]}")
            continue
        check(f, out, counts)
    n += 1

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

print(f"export-check: {n} traces, {len(failures)} failures")
sys.exit(1 if failures else 0)
