"""budget_check.py - the launch stacks' cost budget (src_pystack.c, APX_PY_STACK_BUDGET) in a real
python3, without CUDA (ctest pystack-budget): with a budget of 10 whole walks a second (one
per 100 ms window), 3,000 "launches" from two call sites - a shared library-like helper
called from two different lines of the program - must each keep the right line: the report
gives each marked line exactly its own launches, and the trace's python_stacks key/value
says most calls took their call site's last stack. Usage: python3 budget_check.py HARNESS.so
APX; exit 0 when all hold."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

os.environ["APX_PY_STACK_BUDGET"] = "10"
lib = ctypes.CDLL(sys.argv[1])
apx = sys.argv[2]
src = open(__file__, encoding="utf-8").read().splitlines()
LINE_A = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# EXPECT: a"))
LINE_B = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# EXPECT: b"))


# the same innermost frame for both sites, in "library" code (a file name in <...> is one, as
# torch's Module.forward is): the line a launch stands for is the caller's
_lib = {"lib": lib}
exec(compile("def launch():\n    lib.harness_launch(10)\n", "<fakelib>", "exec"), _lib)
launch = _lib["launch"]


def site_a():
    launch()  # EXPECT: a


def site_b():
    launch()  # EXPECT: b


out = os.path.join(tempfile.mkdtemp(prefix="apx-budget-"), "budget.apx")
if lib.harness_start(out.encode()) != 0:
    print("budget_check: harness_start failed")
    sys.exit(1)
na = nb = 0
for i in range(3000):
    if i % 3:
        site_a()
        na += 1
    else:
        site_b()
        nb += 1
    if i % 500 == 0:
        lib.harness_drain()
lib.harness_drain()
if lib.harness_stop() != 0:
    print("budget_check: writer close failed")
    sys.exit(1)
doc = json.loads(subprocess.run([apx, "report", "--format", "json", "--top", "100", out],
                                capture_output=True, text=True).stdout)
me = os.path.abspath(__file__)
got = {h.get("line"): h.get("launches", 0) for h in doc.get("hotspots") or []
       if h.get("file") == me}
dump = os.path.join(os.path.dirname(os.path.abspath(apx)), "apx-dump")
kv = subprocess.run([dump, out], capture_output=True, text=True).stdout
reused = [json.loads(ln)["value"] for ln in kv.splitlines()
          if '"key":"python_stacks"' in ln]
fail = []
if got.get(LINE_A) != na or got.get(LINE_B) != nb:
    fail.append("launches by line %s, expected %d at %d and %d at %d" % (got, na, LINE_A, nb, LINE_B))
n = 0
if reused:
    try:
        n = int(reused[0].split(" calls over the walk budget")[0].rsplit(" ", 1)[-1])
    except ValueError:
        n = 0
if n < 2500:
    fail.append("calls that took their site's last stack: %d, expected most of 3000 (%s)" %
                (n, reused[:1]))
if fail:
    print("budget_check: FAIL\n  " + "\n  ".join(fail))
    sys.exit(1)
print("budget_check: %d + %d launches kept their lines (%d:%d, %d:%d), %d of them from the "
      "call-site cache: ok" % (na, nb, LINE_A, na, LINE_B, nb, n))
