"""diff.py APX SRC - apx diff (cli/cmd_diff.c, lib/analysis/diff.c, lib/report/build_diff.c;
docs/diff.md) on the suite's real H200 traces (tests/fixtures/suite: each program planted with
one problem and fixed, facts.json their step times as the programs measured them while traced):
the median step's change against facts.json's planted - fixed, outside the noise; the planted
rule's finding gone with BEFORE's estimate beside the measured saving; a trace against itself
(no change, inside the noise); two different programs refused (and compared with
--force-compare); JSON, CSV and well-formed HTML; the same output twice; bad input (a missing,
damaged or stepless trace, usage errors, -o rules) and a file name with a terminal escape.
Prints one line per check. Called by ctest (label integration)."""
import csv
import html.parser
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

apx, src = sys.argv[1], sys.argv[2]
suite = os.path.join(src, "tests", "fixtures", "suite")
facts = json.load(open(os.path.join(suite, "facts.json")))
fails = 0


def check(what, ok, got=""):
    global fails
    print(("PASS  " if ok else "FAIL  ") + what + ("" if ok else f": {got}"))
    fails += not ok


def diff(*args):
    return subprocess.run([apx, "diff", "--color", "never", *args], capture_output=True)


def trace(name):
    return os.path.join(suite, name + ".apx")


def fits(text):
    return all(len(line) <= 100 for line in text.splitlines())


# planted against fixed: the change the programs measured, the planted finding gone
for prog in ("sync_item", "pageable", "launch_bound"):
    f = facts[prog]
    before, after = trace(prog + "_planted"), trace(prog + "_fixed")
    p = diff("--format", "json", before, after)
    check(f"{prog}: exit 0", p.returncode == 0, p.stderr.decode())
    if p.returncode:
        continue
    d = json.loads(p.stdout)
    st = d["step_time"]
    want = (f["planted_traced_ms"] - f["fixed_traced_ms"]) * 1e6
    got = -st["change_ns"]
    check(f"{prog}: schema apx.diff/1", d["schema"] == "apx.diff/1", d["schema"])
    check(f"{prog}: the median step {got / 1e6:.3f} ms shorter, facts {want / 1e6:.3f} ms "
          "(within 20 %)", abs(got - want) <= 0.2 * want, st)
    lo, hi = st["change_ci95_ns"]
    check(f"{prog}: faster, outside the noise", st["outside_noise"] and st["faster"] and hi < 0
          and lo <= st["change_ns"] <= hi, st)
    check(f"{prog}: one program", not d["program"]["different_programs"] and
          d["program"]["same_program"], d["program"])
    fd = next((x for x in d["findings"] if x["rule"] == f["rule"]), None)
    check(f"{prog}: {f['rule']} disappeared or shrank, with BEFORE's estimate",
          fd is not None and fd["status"] in ("disappeared", "shrank") and
          fd["before_step_ns"] > 0 and fd["measured_saving_ns"] == got, fd)
    b, a = d["before"], d["after"]
    check(f"{prog}: each median inside its interval",
          b["median_ci95_ns"][0] <= b["step_median_ns"] <= b["median_ci95_ns"][1] and
          a["median_ci95_ns"][0] <= a["step_median_ns"] <= a["median_ci95_ns"][1], (b, a))
    check(f"{prog}: the steady state's steps", b["steps"] >= 60 and a["steps"] >= 60,
          (b["steps"], a["steps"]))
    idle = {x["cause"]: x for x in d["idle"]}
    check(f"{prog}: every idle cause, a step", len(idle) >= 10 and "sync" in idle, sorted(idle))
    t = diff(before, after)
    text = t.stdout.decode()
    check(f"{prog}: text: the finding with BEFORE's estimate", t.returncode == 0 and
          f["rule"] in text and "estimated before" in text and "AFTER is faster" in text, text)
    check(f"{prog}: text lines fit 100 columns", fits(text), text)

# sync_item: the .item() read backs are gone (copies a step halved): the work differs
p = diff("--format", "json", trace("sync_item_planted"), trace("sync_item_fixed"))
d = json.loads(p.stdout) if p.returncode == 0 else None
check("sync_item: copies a step differ, a warning", d is not None and d["work"]["differs"] and
      d["work"]["copies_differ"] and not d["work"]["kernels_differ"] and
      "work differs" in d["work"]["warning"], d and d["work"])
top = d and d["kernels"][0]["name"]
check("sync_item: kernels by demangled name", d is not None and
      any(k["name"].startswith("void at::native::") for k in d["kernels"]) and
      d["kernels_total"]["kernels"] == len(d["kernels"]) + d["kernels_other"]["kernels"], top)

# a trace against itself: nothing changed, inside the noise
p = diff("--format", "json", trace("sync_item_planted"), trace("sync_item_planted"))
d = json.loads(p.stdout) if p.returncode == 0 else None
if d:
    st = d["step_time"]
    lo, hi = st["change_ci95_ns"]
    check("itself: no change, inside the noise", st["change_ns"] == 0 and lo <= 0 <= hi and
          not st["outside_noise"], st)
    check("itself: every finding the same", all(x["status"] == "same" for x in d["findings"]),
          d["findings"])
    check("itself: every kernel unchanged", all(k["change_ns"] == 0 for k in d["kernels"]) and
          d["program"]["same_command"] and not d["work"]["differs"], d["kernels"][:2])
else:
    check("itself: exit 0", False, p.stderr.decode())

# different programs: refused, or compared with --force-compare and a warning
a, b = trace("sync_item_planted"), trace("fp32_matmul_planted")
p = diff(a, b)
err = p.stderr.decode()
check("different programs: refused, exit 1, nothing on stdout", p.returncode == 1 and
      not p.stdout, (p.returncode, p.stdout[:200]))
check("different programs: the message names both files and why",
      "sync_item_planted.apx" in err and "fp32_matmul_planted.apx" in err and
      "different programs" in err and "--force-compare" in err and "overlap" in err, err)
p = diff("--format", "json", "--force-compare", a, b)
d = json.loads(p.stdout) if p.returncode == 0 else None
check("different programs: --force-compare compares them", d is not None and
      d["program"]["different_programs"] and d["program"]["compared_anyway"] and
      d["program"]["kernel_overlap_time"] < 0.3, d and d["program"])
p = diff("--force-compare", a, b)
check("different programs: --force-compare: a warning in the text", p.returncode == 0 and
      b"look like different programs" in p.stdout, p.stdout[:300])

# formats: HTML well formed, CSV tables, the same output twice
pair = (trace("pageable_planted"), trace("pageable_fixed"))


class Tags(html.parser.HTMLParser):
    void = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.bad = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.void:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.bad.append(tag)
        else:
            self.stack.pop()


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "d.html")
    p = diff("--format", "html", "-o", out, *pair)
    page = open(out).read() if p.returncode == 0 else ""
    tags = Tags()
    tags.feed(page)
    check("html: a page, every tag closed", page.startswith("<!DOCTYPE html>") and
          "<h1>apx diff</h1>" in page and not tags.bad and not tags.stack,
          (p.stderr.decode(), tags.bad, tags.stack))
    check("html: the sections and the change", all(f'id="{s}"' in page for s in
          ("summary", "findings", "kernels", "idle", "method")) and "AFTER is faster" in page,
          page[:300])
    p = diff("--format", "html", "-o", out, *pair)
    check("html: an existing -o FILE without --force: exit 2", p.returncode == 2, p.returncode)
    p = diff("--format", "html", "-o", out, "--force", *pair)
    check("html: with --force: replaced", p.returncode == 0, p.stderr.decode())
    shutil.copy(pair[0], os.path.join(tmp, "b.apx"))
    p = diff("-o", os.path.join(tmp, "b.apx"), "--force", os.path.join(tmp, "b.apx"), pair[1])
    check("-o onto BEFORE: refused, exit 1", p.returncode == 1 and
          os.path.getsize(os.path.join(tmp, "b.apx")) == os.path.getsize(pair[0]), p.returncode)

    p = diff("--format", "csv", *pair)
    parts = p.stdout.decode().split("\n\n")
    names = [x.splitlines()[0] for x in parts if x.strip()]
    rows = list(csv.DictReader(io.StringIO(parts[0].split("\n", 1)[1])))
    check("csv: a table a part", p.returncode == 0 and "# summary/runs" in names and
          "# findings/findings" in names and "# kernels/kernels" in names and
          "# idle/idle" in names and [r["run"] for r in rows] == ["before", "after"], names)

    one, two = diff("--format", "json", *pair), diff("--format", "json", *pair)
    check("the same numbers twice (fixed seed)", one.stdout == two.stdout and one.returncode == 0,
          one.stderr.decode())

    # bad input
    p = diff(os.path.join(tmp, "missing.apx"), pair[1])
    check("a missing file: exit 1, named", p.returncode == 1 and b"missing.apx" in p.stderr and
          not p.stdout, p.stderr)
    stepless = os.path.join(src, "tests", "fixtures", "sample.apx")
    p = diff(pair[0], stepless)
    check("no steady state: exit 1, named, why", p.returncode == 1 and b"sample.apx" in
          p.stderr and b"no steady state" in p.stderr, p.stderr)
    cut = os.path.join(tmp, "cut.apx")
    with open(trace("sync_item_planted"), "rb") as fi, open(cut, "wb") as fo:
        fo.write(fi.read(400000))
    p = diff(cut, trace("sync_item_fixed"))
    check("a damaged file: compared up to the damage, exit 1, said", p.returncode == 1 and
          b"cut.apx" in p.stderr and b"cut short" in p.stderr and b"AFTER is" in p.stdout,
          p.stderr)
    with open(os.path.join(tmp, "junk.apx"), "w") as fo:
        fo.write("not a trace\n")
    p = diff(os.path.join(tmp, "junk.apx"), pair[1])
    check("not a trace: exit 1, named", p.returncode == 1 and b"junk.apx" in p.stderr, p.stderr)
    p = diff(pair[0])
    check("one file: usage error, exit 2", p.returncode == 2 and b"two traces" in p.stderr,
          p.stderr)
    p = diff("--top", "0", *pair)
    check("--top 0: usage error, exit 2", p.returncode == 2, p.stderr)
    p = diff("--bogus", *pair)
    check("an unknown option: exit 2, named", p.returncode == 2 and b"--bogus" in p.stderr,
          p.stderr)
    p = diff("-n", "1", "--format", "json", *pair)
    d = json.loads(p.stdout) if p.returncode == 0 else None
    check("--top 1: one kernel, the others summed", d is not None and len(d["kernels"]) == 1 and
          d["kernels_other"]["kernels"] == d["kernels_total"]["kernels"] - 1, d and d["kernels"])

    # a file name with a terminal escape: never raw on the terminal
    esc = os.path.join(tmp, "x\x1b[31mred.apx")
    shutil.copy(pair[0], esc)
    p = diff(esc, pair[1])
    q = diff(esc, trace("fp32_matmul_planted"))
    check("a file name's escape is escaped (stdout, stderr)", p.returncode == 0 and
          b"\x1b" not in p.stdout and b"\\x1b" in p.stdout and b"\x1b" not in q.stderr and
          b"\\x1b" in q.stderr, (p.stdout[:200], q.stderr[:200]))

print("ok" if not fails else f"{fails} failed")
sys.exit(1 if fails else 0)
