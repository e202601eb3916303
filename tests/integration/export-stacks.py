#!/usr/bin/env python3
"""export-stacks.py - the Python stacks in `apx export` on a trace whose stacks are known
(stacks-gen): SQLite (docs/export.md's stack queries against their exact answers, callchainId
on kernels, copies, memsets, syncs and runtime calls, COMPOSITE_EVENTS and the
SAMPLING_CALLCHAINS view), Perfetto (the "stack" annotation of each kernel, PerfSample packets
with interned callstacks outermost first, decoded with protoc against
tests/fixtures/perfetto/apx_subset.proto with no unknown field when protoc is installed, and
with a wire reader of its own), Chrome/Kineto JSON ("Call stack" arguments in torch.profiler's
shape). Called by ctest: APX STACKS_GEN SRCDIR HAVE_SQLITE (1 or 0).
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

apx, gen, src, have_sqlite = sys.argv[1:5]
fails = []

LINEAR = "/usr/lib/python3/dist-packages/torch/nn/functional.py"
S1_KINETO = (LINEAR + "(200): linear;/home/u/model.py(41): Model.forward;"
             "/home/u/train.py(10): train")
S1_PERFETTO = (LINEAR + ":200 linear; /home/u/model.py:41 Model.forward; "
               "/home/u/train.py:10 train")
EVIL = "<script>alert('x')</script> & \"q\""
LONG = "very_long_" + "f" * 290
EXPECTED = {
    "top-lines-gpu": [
        ("loss_fn", "/home/u/model.py", 50, 1500000, 5),
        ("linear", LINEAR, 200, 1000000, 10),
        ("train", "/home/u/train.py", 10, 100000, 2),
        (LONG, "/home/u/model.py", 60, 30000, 1),
        (EVIL, "/home/u/evil.py", 7, 20000, 1),
    ],
    "gpu-under-line": [
        ("train", "/home/u/train.py", 10, 2650000, 19),
        ("loss_fn", "/home/u/model.py", 50, 1500000, 5),
        ("Model.forward", "/home/u/model.py", 41, 1000000, 10),
        ("linear", LINEAR, 200, 1000000, 10),
        (LONG, "/home/u/model.py", 60, 30000, 1),
        (EVIL, "/home/u/evil.py", 7, 20000, 1),
    ],
    "sample-lines": [
        ("python3", "Running", "tokenize", 12, 20, 100000000),
        ("python3", "Sleeping", "train", 10, 10, 50000000),
    ],
}


def check(ok, what):
    if not ok:
        fails.append(what)
    return ok


def export(fmt, trace, out):
    r = subprocess.run([apx, "export", "--format", fmt, "-o", out, trace], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"export {fmt}: exit {r.returncode}: {r.stderr}")
    return r.returncode == 0


def doc_queries():
    text = open(os.path.join(src, "docs", "export.md")).read()
    out = {}
    for b in re.findall(r"```sql\n(.*?)```", text, re.S):
        m = re.match(r"-- query: (\S+)\n", b)
        if m and m.group(1) in EXPECTED:
            out[m.group(1)] = b
    return out


def check_sqlite(trace, tmp):
    out = os.path.join(tmp, "s.sqlite")
    if not export("sqlite", trace, out):
        return
    db = sqlite3.connect(out)
    queries = doc_queries()
    check(set(queries) == set(EXPECTED), f"docs/export.md's stack queries: {sorted(queries)}")
    for name, sql in queries.items():
        try:
            rows = db.execute(sql).fetchall()
        except sqlite3.Error as e:
            check(False, f"query {name}: {e}")
            continue
        check(rows == EXPECTED[name], f"query {name}: {rows}\n want {EXPECTED[name]}")
    one = lambda sql: db.execute(sql).fetchone()
    check(one("SELECT COUNT(*), COUNT(callchainId) FROM CUPTI_ACTIVITY_KIND_KERNEL") == (20, 19),
          "kernels' callchainId")
    check(one("SELECT COUNT(callchainId) FROM CUPTI_ACTIVITY_KIND_RUNTIME") == (21,),
          "runtime callchainId (19 launches, the copy's and the memset's)")
    for table, want in (("MEMCPY", 3), ("MEMSET", 1), ("SYNCHRONIZATION", 3)):
        check(one(f"SELECT callchainId FROM CUPTI_ACTIVITY_KIND_{table}") == (want,),
              f"{table} callchainId")
    check(one("SELECT COUNT(*), SUM(periodNs), COUNT(callchainId) FROM COMPOSITE_EVENTS") ==
          (36, 180000000, 30), "COMPOSITE_EVENTS")
    check(one("SELECT COUNT(*) FROM SAMPLING_CALLCHAINS") == (50,), "SAMPLING_CALLCHAINS rows")
    check(one("SELECT COUNT(*) FROM COMPOSITE_EVENTS WHERE syscall = 202") == (10,), "syscall")
    # the kernels' stack, innermost first, as nsys's CUDA_CALLCHAINS gives it
    rows = db.execute("SELECT f.value, c.line FROM CUDA_CALLCHAINS AS c JOIN StringIds AS f "
                      "ON f.id = c.symbol WHERE c.id = (SELECT callchainId FROM "
                      "CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1) ORDER BY c.stackDepth"
                      ).fetchall()
    check(rows == [("linear", 200), ("Model.forward", 41), ("train", 10)], f"a stack: {rows}")


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
        elif wt == 5:
            yield f, wt, int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % wt)


def check_perfetto(trace, tmp):
    out = os.path.join(tmp, "p.perfetto-trace")
    if not export("perfetto", trace, out):
        return
    b = open(out, "rb").read()
    if subprocess.run(["which", "protoc"], capture_output=True).returncode == 0:
        p = subprocess.run(["protoc", "--decode=apxtest.Trace", "-I",
                            os.path.join(src, "tests", "fixtures", "perfetto"),
                            "apx_subset.proto"], input=b, capture_output=True)
        if check(p.returncode == 0, f"protoc: {p.stderr[:300]}"):
            text = p.stdout.decode(errors="replace")
            check(not any(line.strip()[:1].isdigit() for line in text.splitlines()),
                  "fields apx_subset.proto does not name")
    else:
        print("note: protoc not installed; the wire reader alone checks the Perfetto export")
    names, frames, stacks, samples, strings = {}, {}, {}, [], []
    last_ts = 0
    for f, wt, span in fields(b, 0, len(b)):
        ts = None
        for pf, pwt, v in fields(b, *span):
            if pf == 8:
                ts = v
            elif pf == 12:
                for df, dwt, dv in fields(b, *v):
                    if df in (5, 6, 7):
                        rec = {}
                        for ef, ewt, ev in fields(b, *dv):
                            if ewt == 2:
                                ev = b[ev[0]:ev[1]].decode()
                            rec.setdefault(ef, []).append(ev)
                        iid = rec[1][0]
                        if df == 5:
                            names[iid] = rec[2][0]
                        elif df == 6:
                            check(rec.get(3) == [1], "a frame without the mapping")
                            frames[iid] = names.get(rec[2][0])
                        else:
                            check(iid not in stacks, "a callstack interned twice")
                            stacks[iid] = [frames.get(x) for x in rec.get(2, [])]
            elif pf == 66:
                rec = {ef: ev for ef, _, ev in fields(b, *v)}
                samples.append((ts, rec.get(2), rec.get(3), rec.get(4)))
                check(rec.get(4) in stacks, "a PerfSample before its callstack")
            elif pf == 11:
                for ef, ewt, ev in fields(b, *v):
                    if ef == 4:
                        for af, awt, av in fields(b, *ev):
                            if af == 6:
                                strings.append(b[av[0]:av[1]].decode())
        if ts is not None:
            check(ts >= last_ts, f"timestamps go back ({ts} after {last_ts})")
            last_ts = ts
    check(len(samples) == 30, f"{len(samples)} PerfSamples, want 30 (samples with frames)")
    check(sum(1 for s in samples if s[2] == 4242) == 30, "PerfSample tids")
    want = {("train (train.py:10)", "tokenize (data.py:12)"): 20, ("train (train.py:10)",): 10}
    got = {}
    for s in samples:
        key = tuple(stacks.get(s[3], []))
        got[key] = got.get(key, 0) + 1
    check(got == want, f"PerfSample callstacks (outermost first): {got}")
    check(strings.count(S1_PERFETTO) == 10 + 10 + 2,
          "the stack annotation of the gemm kernels, the memset and their calls: "
          f"{strings.count(S1_PERFETTO)}")
    check(any(s.startswith("/home/u/evil.py:7 " + EVIL) for s in strings), "the evil stack")


def check_chrome(trace, tmp):
    out = os.path.join(tmp, "c.json")
    if not export("chrome", trace, out):
        return
    doc = json.load(open(out))
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    stacks = {}
    for e in ev:
        cs = e.get("args", {}).get("Call stack")
        if cs is not None:
            stacks.setdefault(e["cat"], []).append(cs)
    check(stacks.get("kernel", []).count(S1_KINETO) == 10, "the gemm kernels' Call stack")
    check(len(stacks.get("kernel", [])) == 19, "kernels with a Call stack")
    check(stacks.get("cuda_runtime", []).count(S1_KINETO) == 11,
          "runtime calls' Call stack (gemm launches and the memset)")
    check(stacks.get("gpu_memcpy") == ["/home/u/train.py(10): train"], "the copy's Call stack")
    check(any(s.startswith("/home/u/evil.py(7): " + EVIL) for s in stacks.get("kernel", [])),
          "the evil stack, JSON-escaped and read back whole")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "stacks.apx")
        if subprocess.run([gen, trace]).returncode != 0:
            print("FAIL: stacks-gen")
            return 1
        if have_sqlite == "1":
            check_sqlite(trace, tmp)
        check_perfetto(trace, tmp)
        check_chrome(trace, tmp)
    if fails:
        print("FAIL: " + "\n".join(fails))
        return 1
    print("export-stacks: sqlite, perfetto and chrome stacks as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
