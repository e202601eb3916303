"""attach_check.py - apx attach PID --python-only against real interpreters, without a GPU
(ctest pystack-attach): under every CPython 3.10-3.14 here (Debian's python3, pyenv's
versions, $APX_PYTHONS) a target runs spin() in a loop and a waiter thread; apx attach samples
it for 2 s and must exit 0, leave it running, and write a trace whose `apx report --format json`
names spin's line first by host time and the target's threads. Then the refusals, each with
exit 1, its reason on stderr and no file written: a process that does not exist, one that is
not Python (sleep 60), one apx may not read (as root: apx run as nobody against a root-owned
python; else pid 1 when it belongs to another user), CPython versions apx does not know (2.x,
3.0-3.9 when present), and attach without --python-only to a Python that has not used CUDA
(no GPU work to profile: the collector is not loaded). By name: a unique script name attaches
to its process (attach-PID.apx), two processes of one name are listed and neither attached, an
unknown name is refused.
Usage: python3 attach_check.py APX; exit 0 when all hold."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

apx = os.path.abspath(sys.argv[1])
tmp = tempfile.mkdtemp(prefix="apx-attach-")
os.chmod(tmp, 0o755)
failures = []
TARGET = """import threading, time
def spin():
    while True:
        sum(range(1000))  # EXPECT: spin
def waiter():
    while True:
        time.sleep(0.05)
threading.Thread(target=waiter, name="waiter", daemon=True).start()
print("ready", flush=True)
spin()
"""
script = os.path.join(tmp, "target.py")
with open(script, "w", encoding="utf-8") as f:
    f.write(TARGET)
SPIN_LINE = next(i + 1 for i, l in enumerate(TARGET.splitlines()) if l.endswith("# EXPECT: spin"))


def version(py):
    try:
        return subprocess.run([py, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


def start(argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if script in argv:
        p.stdout.readline()  # "ready": the loop runs
    else:
        time.sleep(0.3)
    return p


def attach(pid, out, *extra, prefix=()):
    return subprocess.run(list(prefix) + [apx, "attach", str(pid), *extra, "-o", out],
                          capture_output=True, text=True, timeout=60)


def refused(what, pid, reason, *extra, prefix=()):
    out = os.path.join(tmp, "refused-%s.apx" % what.replace(" ", "-"))
    r = attach(pid, out, *extra, prefix=prefix)
    if r.returncode != 1 or reason not in r.stderr or os.path.exists(out):
        failures.append("%s: exit %d, stderr %r, file %s (expected exit 1, %r, no file)" % (
            what, r.returncode, r.stderr.strip(), os.path.exists(out), reason))
    else:
        print("attach_check: %s refused: %s" % (what, r.stderr.strip()))


# ---- sampling, under every interpreter apx reads ----
cands = ["/usr/bin/python3", sys.executable]
cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-4]*/bin/python3")))
cands += [p for p in os.environ.get("APX_PYTHONS", "").split(":") if p]
seen = set()
for py in cands:
    ver = version(py) if os.path.exists(py) else ""
    if not ver or ver in seen or not ("3.10" <= ver[:4] <= "3.14" and ver.count(".") == 2):
        continue
    seen.add(ver)
    p = start([py, script])
    out = os.path.join(tmp, "py%s.apx" % ver)
    try:
        r = attach(p.pid, out, "--python-only", "--duration", "2", "--rate", "100")
        alive = p.poll() is None
    finally:
        p.kill()
        p.wait()
    if r.returncode != 0 or not alive:
        failures.append("%s (%s): attach exit %d (%s), target %s" % (
            py, ver, r.returncode, r.stderr.strip(), "running" if alive else "ended"))
        continue
    rep = subprocess.run([apx, "report", "--format", "json", "--top", "50", out],
                         capture_output=True, text=True)
    txt = subprocess.run([apx, "report", out], capture_output=True, text=True).stdout
    try:
        doc = json.loads(rep.stdout)
    except ValueError:
        failures.append("%s (%s): apx report --format json failed: %s" % (py, ver, rep.stderr))
        continue
    hot = sorted(doc.get("hotspots") or [], key=lambda h: -h.get("host_ns", 0))
    threads = doc.get("threads") or []
    top = (hot[0].get("file"), hot[0].get("line"), hot[0].get("func")) if hot else None
    if not top or top[:2] != (script, SPIN_LINE) or "spin" not in str(top[2]):
        failures.append("%s (%s): top host line %s, expected %s:%d spin" % (
            py, ver, top, script, SPIN_LINE))
    if not any(t.get("tid") == p.pid for t in threads):
        failures.append("%s (%s): threads table %s has no thread %d" % (py, ver, threads, p.pid))
    if "target.py:%d spin" % SPIN_LINE not in txt or "Threads (sampled)" not in txt:
        failures.append("%s (%s): the text report does not list target.py:%d spin" % (
            py, ver, SPIN_LINE))
    print("attach_check: %s (%s): top host line %s:%d %s (%.0f ms), %d threads: ok" % (
        py, ver, os.path.basename(script), SPIN_LINE, top[2] if top else "-",
        hot[0].get("host_ns", 0) / 1e6 if hot else 0, len(threads)))
if not seen & {v for v in seen if v[:4] in ("3.11", "3.12", "3.13")}:
    failures.append("no CPython 3.11-3.13 here to attach to")

# ---- refusals ----
gone = subprocess.Popen(["true"])
gone.wait()
refused("no such process", gone.pid, "no process %d" % gone.pid, "--python-only")
sl = subprocess.Popen(["sleep", "60"])
try:
    time.sleep(0.2)
    refused("not python", sl.pid, "is not a Python process", "--python-only")
finally:
    sl.kill()
    sl.wait()
p = start([sys.executable, script])
try:
    refused("gpu attach", p.pid, "not loaded the CUDA driver")
    if os.geteuid() == 0 and shutil.which("setpriv"):
        refused("permission", p.pid, "not allowed to read process", "--python-only",
                prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    elif os.stat("/proc/1").st_uid != os.geteuid():
        refused("permission", 1, "not allowed to read process", "--python-only")
    else:
        print("attach_check: permission refusal not checked (no other user's process)")
finally:
    p.kill()
    p.wait()
old = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/[23].*/bin/python[23].[0-9]")) +
             glob.glob(os.path.expanduser("~/.pyenv/versions/[23].*/bin/python[23].[0-9]m")))
for py in old:
    ver = version(py)
    if not ver or ver in seen or tuple(int(x) for x in ver.split(".")[:2]) >= (3, 10):
        continue
    seen.add(ver)
    q = start([py, "-c", "import time; time.sleep(60)"])
    try:
        refused("CPython %s" % ver, q.pid, "CPython %s" % ".".join(ver.split(".")[:2]),
                "--python-only")
    finally:
        q.kill()
        q.wait()

# ---- by name (apx attach NAME): one process of that name is attached to, its pid in the
# default file name; two are listed and neither attached; none is refused ----
named = os.path.join(tmp, "apx_named_target_%d.py" % os.getpid())
shutil.copy(script, named)
base = os.path.basename(named)
a = subprocess.Popen([sys.executable, named], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     text=True)
a.stdout.readline()
b = None
try:
    r = subprocess.run([apx, "attach", base, "--python-only", "-d", "1"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    out = os.path.join(tmp, "attach-%d.apx" % a.pid)
    if r.returncode != 0 or not os.path.exists(out) or a.poll() is not None:
        failures.append("attach by name: exit %d, %r, %s missing or target gone" % (
            r.returncode, r.stderr.strip(), out))
    else:
        print("attach_check: attach %s -> pid %d: ok" % (base, a.pid))
    b = subprocess.Popen([sys.executable, named], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    b.stdout.readline()
    r = subprocess.run([apx, "attach", base, "--python-only", "-d", "1", "-o",
                        os.path.join(tmp, "two.apx")], capture_output=True, text=True, timeout=60)
    if (r.returncode != 1 or "2 processes are named" not in r.stderr or str(a.pid) not in r.stderr
            or str(b.pid) not in r.stderr or os.path.exists(os.path.join(tmp, "two.apx"))):
        failures.append("two processes of one name: exit %d, %r (expected 1, both pids, no "
                        "file)" % (r.returncode, r.stderr.strip()))
    else:
        print("attach_check: two processes named %s: both listed, none attached: ok" % base)
finally:
    for q in (a, b):
        if q:
            q.kill()
            q.wait()
refused("no process of that name", "no_such_program_%d.py" % os.getpid(), "no process named",
        "--python-only")

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print("attach_check: FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print("attach_check: ok")
