"""cli-commands.py APX SRC - the command line (cli/main.c, cli/cmd_*.c):
"did you mean" for a mistyped command, help topic or long option; one message prefix
("apx CMD: ...", never "apx: CMD: ..."); -o - is stdout for report, diff and export (SQLite
too: staged, then copied); apx info --json (docs/format.md, "apx info --json"); apx export of
a torch.profiler (Kineto) JSON trace. Called by ctest (label integration); exit 0 when every
check passes."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

apx, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
fx = os.path.join(src, "tests", "fixtures")
sample = os.path.join(fx, "sample.apx")
kineto = os.path.join(fx, "kineto", "alexnet.json.gz")
fails = 0


def check(what, ok, got=""):
    global fails
    print(("PASS  " if ok else "FAIL  ") + what + ("" if ok else f": {got}"))
    fails += not ok


def run(*args, cwd=None):
    return subprocess.run([apx, *args], capture_output=True, cwd=cwd)


def err(p):
    return p.stderr.decode(errors="replace")


# ---- did you mean ------------------------------------------------------------------------
for args, want in ((["reprot"], "'reprot' is not an apx command; did you mean 'report'?"),
                   (["exprot", "x"], "did you mean 'export'?"),
                   (["hlep"], "did you mean 'help'?"),
                   (["help", "exprot"], "apx help: no command 'exprot'; did you mean 'export'?"),
                   (["--verison"], "unknown option '--verison'; did you mean '--version'?"),
                   (["report", "--formt", "json", sample],
                    "apx report: unknown option '--formt'; did you mean '--format'?"),
                   (["report", "--formt=json", sample], "did you mean '--format'?"),
                   (["export", "--merge-rnaks", sample], "did you mean '--merge-ranks'?"),
                   (["info", "--chnuks", sample], "did you mean '--chunks'?"),
                   (["diff", "--forse", sample, sample], "did you mean '--force'?")):
    p = run(*args)
    check(f"apx {' '.join(args[:2])}: exit 2, {want!r}", p.returncode == 2 and want in err(p),
          f"exit {p.returncode}: {err(p)}")
for args in (["frobnicate"], ["report", "--zzzzzz", sample]):
    p = run(*args)
    check(f"apx {' '.join(args[:2])}: exit 2, no guess", p.returncode == 2 and
          "did you mean" not in err(p), f"exit {p.returncode}: {err(p)}")

# ---- one prefix: "apx CMD: " -------------------------------------------------------------
with tempfile.TemporaryDirectory() as t:
    missing = os.path.join(t, "missing.apx")
    for cmd, args in (("export", ["--format", "chrome", "-o", os.path.join(t, "o.json"),
                                  missing]),
                      ("report", [missing]),
                      ("info", [missing]),
                      ("analyze", ["-o", t, "--", "true"])):
        p = run(cmd, *args)
        lines = [ln for ln in err(p).splitlines() if ln and not ln.startswith("see 'apx help")]
        check(f"apx {cmd}: every message starts 'apx {cmd}: '", p.returncode != 0 and lines and
              all(ln.startswith(f"apx {cmd}: ") for ln in lines), err(p))

# ---- -o - is stdout ----------------------------------------------------------------------
with tempfile.TemporaryDirectory() as t:
    p = run("report", "--format", "json", "-o", "-", sample, cwd=t)
    check("report -o -: JSON on stdout", p.returncode == 0 and
          json.loads(p.stdout)["schema"].startswith("apx.report/"), err(p))
    before = os.path.join(fx, "suite", "sync_item_planted.apx")
    after = os.path.join(fx, "suite", "sync_item_fixed.apx")
    if os.path.exists(before):
        p = run("diff", "--format", "json", "-o", "-", before, after, cwd=t)
        check("diff -o -: JSON on stdout", p.returncode == 0 and
              json.loads(p.stdout)["schema"] == "apx.diff/1", err(p))
    p = run("export", "--format", "chrome", "-o", "-", sample, cwd=t)
    check("export --format chrome -o -: JSON on stdout", p.returncode == 0 and
          "traceEvents" in json.loads(p.stdout), err(p))
    p = run("export", "--format", "sqlite", "-o", "-", sample, cwd=t)
    if p.returncode == 1 and "not built into" in err(p):
        print("SKIP  export --format sqlite -o -: apx built without libsqlite3")
    else:
        db = os.path.join(t, "out.sqlite")
        with open(db, "wb") as f:
            f.write(p.stdout)
        ok = p.returncode == 0 and p.stdout.startswith(b"SQLite format 3\0")
        if ok:
            con = sqlite3.connect(db)
            ok = con.execute("select count(*) from sqlite_master").fetchone()[0] > 0
            con.close()
        check("export --format sqlite -o -: a whole database on stdout", ok, err(p))
    check("-o - made no file named '-'", not os.path.exists(os.path.join(t, "-")),
          os.listdir(t))

# ---- apx info --json ---------------------------------------------------------------------
corrupt = os.path.join(fx, "corrupt")
damaged = sorted(os.path.join(corrupt, n) for n in os.listdir(corrupt) if n.endswith(".apx"))
p = run("info", "--json", "--chunks", sample, "/nonexistent/x.apx", *damaged)
try:
    doc = json.loads(p.stdout)
except ValueError as e:
    doc = None
    check("info --json: one JSON object", False, f"{e}: {p.stdout[:200]!r}")
if doc:
    files = doc["files"]
    check("info --json: schema apx.info/1, files in the order given, exit 1 (damaged ones)",
          doc["schema"] == "apx.info/1" and p.returncode == 1 and
          [f["path"] for f in files] == [sample, "/nonexistent/x.apx", *damaged],
          [f["path"] for f in files])
    s = files[0]
    text = run("info", "--chunks", sample).stdout.decode()
    check("info --json: the sample's status, header and span", s["status"] == "complete" and
          s["error"] is None and s["header"]["pid"] == 4242 and
          s["header"]["argv"] == ["python3", "train.py", "--epochs", "1"] and
          s["header"]["clock"] == "CLOCK_MONOTONIC" and s["span"]["end_ns"] >
          s["span"]["start_ns"] and f"{s['chunks']} chunks, {s['size_bytes']} bytes" in text, s)
    # record types in the text's order (type-number order), counts as the text says them
    rows = [ln.split() for ln in text.splitlines()]
    trows = [r for r in rows if len(r) == 5 and r[1].isdigit() and r[0] != "total"]
    check("info --json: records in type-number order, as the text lists them",
          [(r["type"], r["chunks"], r["records"], r["bytes"]) for r in s["records"]] ==
          [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in trows], s["records"])
    check("info --json --chunks: the chunk table in file order",
          [c["chunk"] for c in s["chunk_table"]] == list(range(len(s["chunk_table"]))) and
          all(a["offset"] < b["offset"] for a, b in zip(s["chunk_table"], s["chunk_table"][1:]))
          and len(s["chunk_table"]) + 1 == s["chunks"], s.get("chunk_table"))
    u = files[1]
    check("info --json: an unreadable file has status, error", u["status"] == "unreadable" and
          u["error"], u)
    bad = [f for f in files[2:] if f["status"] != "complete"]
    check("info --json: the corrupt fixtures damaged, truncated or unreadable, each saying why",
          bad and all(f["error"] or f.get("decode_error") for f in bad) and
          {"damaged", "truncated", "unreadable"} == {f["status"] for f in bad},
          [(f["path"], f["status"], f.get("error")) for f in files[2:]])
p = run("info", "--json", "--quiet", sample)
check("info --json --quiet: usage error", p.returncode == 2, err(p))

# ---- apx export of a Kineto JSON trace ---------------------------------------------------
with tempfile.TemporaryDirectory() as t:
    rep = json.loads(run("report", "--format", "json", kineto).stdout)
    p = run("export", "--format", "chrome", kineto, cwd=t)
    out = os.path.join(t, "alexnet.export.json")
    check("export of Kineto JSON: exit 0, default name alexnet.export.json",
          p.returncode == 0 and os.path.exists(out), f"{err(p)} {os.listdir(t)}")
    if os.path.exists(out):
        ev = json.load(open(out))["traceEvents"]
        kernels = [e for e in ev if e.get("cat") == "kernel"]
        check("export of Kineto JSON: its kernels written", len(kernels) > 0, len(ev))
    p = run("export", "--format", "perfetto", "-o", "-", kineto, cwd=t)
    check("export --format perfetto of Kineto JSON to stdout", p.returncode == 0 and
          len(p.stdout) > 1000, err(p))
    p = run("export", "--format", "chrome", "-o", os.path.join(t, "x.json"),
            os.path.join(fx, "kineto", "README"), cwd=t)
    check("export of a file that is neither: exit 1, said", p.returncode == 1 and
          err(p).startswith("apx export: "), err(p))

sys.exit(1 if fails else 0)
