"""sync-causes.py APX SRC - what each host sync waited for (lib/analysis/sync_cause.c, docs/report.md
"What each sync waited for"), on real traces whose programs are known: the suite's sync_item
(tests/gpu/suite/programs.py: loss.item() per micro-batch; H200, no stacks), sync_copy (y.cpu()
of a 32 MiB result every step) and the Python-stacks check's item_sync (tests/gpu/pystack/
item_sync.py: an accuracy .item() every step at line 61, the model's .cuda() at line 37,
torch.cuda.synchronize() at lines 66 and 72; H100). apx report's JSON names the cause in the
synchronization section, the sync-frequency finding's evidence table and its lines; the text
report says it on the line. Prints one line per check. Called by ctest (label integration)."""
import json
import os
import subprocess
import sys

apx, src = sys.argv[1], sys.argv[2]
fails = 0


def check(what, ok, got=""):
    global fails
    print(("PASS  " if ok else "FAIL  ") + what + ("" if ok else f": {got}"))
    fails += not ok


def report(path, fmt="json"):
    p = subprocess.run([apx, "report", "--color", "never", "--format", fmt,
                        os.path.join(src, path)], capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout:
        check(f"{path}: apx report --format {fmt}", False, p.stderr.strip())
        return None
    return json.loads(p.stdout) if fmt == "json" else p.stdout


def causes(d):
    return {c["cause"]: c for c in d["synchronization"]["causes"]}


def finding(d, rule):
    return next((f for f in d["findings"] if f["rule"] == rule), None)


# sync_item: every stream sync after a 4-byte read back is loss.item()'s
path = "tests/fixtures/suite/sync_item_planted.apx"
d = report(path)
if d:
    c = causes(d)
    top = d["synchronization"]["causes"][0]
    check(f"{path}: the top cause is .item()", top["cause"] == "item", top)
    check(f"{path}: 560 .item() syncs, 4-byte reads",
          c["item"]["count"] == 560 and c["item"]["min_bytes"] == c["item"]["max_bytes"] == 4,
          c["item"])
    check(f"{path}: in words", c["item"]["text"] == ".item() (a 4-byte read back)",
          c["item"]["text"])
    check(f"{path}: no read back, no nonzero count",
          "read_back" not in c and "nonzero" not in c, sorted(c))
    check(f"{path}: the uploads of the set-up are blocking .to('cuda')",
          c.get("upload", {}).get("count") == 16, c.get("upload"))
    check(f"{path}: torch.cuda.synchronize() 4 times", c.get("device", {}).get("count") == 4,
          c.get("device"))
    f = finding(d, "sync-frequency")
    check(f"{path}: sync-frequency is finding #1", f is not None and f["rank"] == 1,
          f and f["rank"])
    if f:
        t = f["evidence_table"]
        check(f"{path}: its evidence table by cause, .item() first",
              t and t["columns"][0]["key"] == "cause" and t["rows"][0][0] == "item" and
              t["rows"][0][1] == 560, t)
        check(f"{path}: its evidence says it",
              "  .item() (a 4-byte read back): 560 syncs, " in f["evidence"], f["evidence"])
        check(f"{path}: no stacks, no lines", f["lines"] == [], f["lines"])

# sync_copy: y.cpu() of 32 MiB, a read back (sync-frequency does not fire: sync-copy's)
path = "tests/fixtures/suite/sync_copy_planted.apx"
d = report(path)
if d:
    c = causes(d)
    top = d["synchronization"]["causes"][0]
    check(f"{path}: the top cause is a read back", top["cause"] == "read_back", top)
    check(f"{path}: 70 read backs of 32 MiB",
          c["read_back"]["count"] == 70 and
          c["read_back"]["min_bytes"] == c["read_back"]["max_bytes"] == 32 << 20, c["read_back"])
    check(f"{path}: in words",
          c["read_back"]["text"] == ".cpu() / .tolist() / .numpy() (a 33.6 MB read back)",
          c["read_back"]["text"])
    check(f"{path}: no .item()", "item" not in c and "nonzero" not in c, sorted(c))
    text = report(path, "text")
    check(f"{path}: the text report's synchronization section says it",
          text is not None and ".cpu() / .tolist() / .numpy() (a 33.6 MB read back)" in text)

# item_sync: the line of the .item() says so, a step each
path = "tests/fixtures/pystack/h100/item_sync.apx"
d = report(path)
if d:
    c = causes(d)
    check(f"{path}: 65 .item() syncs of 4 bytes, the most host time",
          d["synchronization"]["causes"][0]["cause"] == "item" and c["item"]["count"] == 65 and
          c["item"]["max_bytes"] == 4, c.get("item"))
    f = finding(d, "sync-frequency")
    check(f"{path}: sync-frequency fires", f is not None)
    lines = {(os.path.basename(l["file"]), l["line"]): l for l in (f or {}).get("lines", [])}
    l61 = lines.get(("item_sync.py", 61))
    check(f"{path}: item_sync.py:61 is the top line, .item(), 1 a step",
          l61 is not None and f["lines"][0] is l61 and l61["cause"] == "item" and
          l61["cause_text"] == ".item() (a 4-byte read back)" and
          0.9 <= l61["per_step"] <= 1.1, l61)
    l37 = lines.get(("item_sync.py", 37))
    check(f"{path}: item_sync.py:37 (model.cuda()) uploads, none in the steady state",
          l37 is not None and l37["cause"] == "upload" and l37["per_step"] == 0, l37)
    l72 = lines.get(("item_sync.py", 72))
    check(f"{path}: item_sync.py:72 is torch.cuda.synchronize()",
          l72 is not None and l72["cause"] == "device", l72)
    text = report(path, "text")
    flat = " ".join(text.split()) if text else ""
    check(f"{path}: the text report's line says it",
          "item_sync.py:61: 65 syncs (1.0 a step), 1.07 s: .item() (a 4-byte read back)" in flat,
          "")
    check(f"{path}: the text report within 100 columns",
          text is not None and all(len(x) <= 100 for x in text.splitlines()))

print(f"sync-causes: {fails} failed")
sys.exit(1 if fails else 0)
