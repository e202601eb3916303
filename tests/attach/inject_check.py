"""inject_check.py - apx_attach_inject() (cli/attach_inject.c) against real python3 processes,
without a GPU (ctest attach-inject). INJECT is test-inject-main, PROBE libapx-attachprobe.so
(apx_attach_probe(path) appends "pid PID call N" to path and returns 42).
Under every CPython 3.10-3.14 here (Debian's /usr/bin/python3, pyenv's, $APX_PYTHONS): a target
sleeping in a loop is injected twice (42 both times, the file names its pid, call 1 then call
2: the second dlopen found the same library) and must then exit normally with its exit code 7.
Under the first: a target with a second thread; a target spinning in pure Python that a
SIGUSR1 (passed on by the injector) sends to sleep, so the injection succeeds; the same target
without the signal (-ETIMEDOUT in time, left running, not stopped, not traced, its code
restored: it sleeps afterwards without a SIGTRAP); SIGTERM to the injector while it waits
(same checks); a library dlopen cannot load and a function it lacks (-ENOEXEC, dlerror's text);
refusals: no such process, sleep (not Python), another user's process (as root: target uid
65534, injector uid 65533), a process already traced.
Usage: python3 inject_check.py INJECT PROBE; exit 0 when all hold."""
import ctypes
import errno
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

inject = os.path.abspath(sys.argv[1])
probe = os.path.abspath(sys.argv[2])
tmp = tempfile.mkdtemp(prefix="apx-inject-")
os.chmod(tmp, 0o755)
failures = []
TARGET = """import os, signal, sys, threading, time
d, mode = sys.argv[1], sys.argv[2]
go = mode != "busy"
def on_usr1(*a):
    global go
    go = True
signal.signal(signal.SIGUSR1, on_usr1)
def sleeper():
    while True:
        time.sleep(0.002)
if mode == "thread":
    threading.Thread(target=sleeper, daemon=True).start()
print("ready", flush=True)
while not go:
    pass
n = 0
while not os.path.exists(os.path.join(d, "stop")):
    time.sleep(0.001)
    n += 1
print("done", n, flush=True)
sys.exit(7)
"""
script = os.path.join(tmp, "target.py")
with open(script, "w", encoding="utf-8") as f:
    f.write(TARGET)


def fail(msg):
    failures.append(msg)
    print("inject_check: FAIL: " + msg)


class Target:
    def __init__(self, py, mode, name, prefix=()):
        self.dir = os.path.join(tmp, name)
        os.mkdir(self.dir)
        os.chmod(self.dir, 0o777)
        self.out = os.path.join(self.dir, "probe.txt")
        self.p = subprocess.Popen(list(prefix) + [py, script, self.dir, mode],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = self.p.pid
        self.p.stdout.readline()  # "ready": the loop runs

    def state(self):
        with open("/proc/%d/stat" % self.pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def tracer(self):
        with open("/proc/%d/status" % self.pid) as f:
            return int(next(l for l in f if l.startswith("TracerPid:")).split()[1])

    def healthy(self, what):
        """Running, not stopped, traced by nobody."""
        time.sleep(0.2)
        if self.p.poll() is not None:
            fail("%s: target ended (%s): %s" % (what, self.p.returncode, self.p.stderr.read()))
            return False
        st, tr = self.state(), self.tracer()
        if st not in "RS" or tr:
            fail("%s: target state %s, TracerPid %d (expected R or S, 0)" % (what, st, tr))
            return False
        return True

    def finish(self, what):
        """Ask it to stop: it must print done N (N > 0) and exit 7."""
        open(os.path.join(self.dir, "stop"), "w").close()
        try:
            out, err = self.p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        if self.p.returncode != 7 or not out.startswith("done ") or out.split()[1] == "0":
            fail("%s: target exit %s, stdout %r, stderr %r (expected 7, done N)" % (
                what, self.p.returncode, out, err[-500:]))
            return False
        return True

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.communicate()

    def calls(self):
        try:
            with open(self.out) as f:
                return f.read().split("\n")[:-1]
        except OSError:
            return []


def run(pid, lib=probe, func="apx_attach_probe", arg=None, timeout_ms=5000, prefix=(),
        exe=inject):
    t0 = time.monotonic()
    r = subprocess.run(list(prefix) + [exe, str(pid), lib, func, arg or "/nonexistent",
                                       str(timeout_ms)],
                       capture_output=True, text=True, timeout=180)
    return r, time.monotonic() - t0


def ok42(out):
    """The injector's "ok 42 paused_us US": the probe's value, and a pause that was measured."""
    w = out.split()
    return len(w) == 4 and w[:2] == ["ok", "42"] and w[2] == "paused_us" and int(w[3]) > 0


def expect_ok(what, t, n_call):
    r, _ = run(t.pid, arg=t.out)
    want = "pid %d call %d" % (t.pid, n_call)
    if r.returncode != 0 or not ok42(r.stdout) or want not in t.calls():
        fail("%s: injector exit %d, %r %r; probe file %r (expected ok 42, %r)" % (
            what, r.returncode, r.stdout.strip(), r.stderr.strip(), t.calls(), want))
        return False
    return True


def expect_err(what, r, err, text):
    out = r.stdout.strip()
    if r.returncode != 1 or not out.startswith("error %d " % -err) or text not in out:
        fail("%s: injector exit %d, %r %r (expected error %d ... %r)" % (
            what, r.returncode, out, r.stderr.strip(), -err, text))
        return False
    if any(ord(c) < 0x20 or ord(c) > 0x7e for c in out):
        fail("%s: reason has unprintable characters: %r" % (what, out))
    print("inject_check: %s: %s" % (what, out))
    return True


def version(py):
    try:
        return subprocess.run([py, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


# ---- loading, twice, under every interpreter ----
cands = ["/usr/bin/python3", sys.executable]
cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-4]*/bin/python3")))
cands += [p for p in os.environ.get("APX_PYTHONS", "").split(":") if p]
pythons, seen = [], set()
for py in cands:
    ver = version(py) if os.path.exists(py) else ""
    if not ver or ver in seen or not ("3.10" <= ver[:4] <= "3.14" and ver.count(".") == 2):
        continue
    seen.add(ver)
    pythons.append(py)
    t = Target(py, "sleep", "sleep-" + ver)
    try:
        if expect_ok("%s twice (1)" % ver, t, 1) and expect_ok("%s twice (2)" % ver, t, 2):
            if t.healthy("%s after injection" % ver) and t.finish("%s after injection" % ver):
                print("inject_check: %s (%s): injected twice, %s, exit 7: ok" % (
                    py, ver, t.calls()))
    finally:
        t.kill()
if not pythons:
    fail("no CPython 3.10-3.14 here")
    print("inject_check: FAIL")
    sys.exit(1)
py = pythons[0]

# ---- a second Python thread ----
t = Target(py, "thread", "thread")
try:
    if expect_ok("two threads", t, 1) and t.healthy("two threads") and t.finish("two threads"):
        print("inject_check: two threads: ok")
finally:
    t.kill()

# ---- a signal while the injector waits is passed on: SIGUSR1 ends the busy loop ----
t = Target(py, "busy", "usr1")
try:
    q = subprocess.Popen([inject, str(t.pid), probe, "apx_attach_probe", t.out, "10000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    os.kill(t.pid, signal.SIGUSR1)
    out, err = q.communicate(timeout=30)
    if q.returncode != 0 or not ok42(out):
        fail("SIGUSR1 while waiting: injector exit %d, %r %r" % (q.returncode, out, err))
    elif t.healthy("SIGUSR1 while waiting") and t.finish("SIGUSR1 while waiting"):
        print("inject_check: SIGUSR1 passed on while waiting: ok")
finally:
    t.kill()

# ---- never releases the GIL: -ETIMEDOUT, left as it was ----
t = Target(py, "busy", "busy")
try:
    r, took = run(t.pid, arg=t.out, timeout_ms=500)
    if expect_err("pure Python loop", r, errno.ETIMEDOUT, "released the GIL") and took > 5:
        fail("pure Python loop: -ETIMEDOUT after %.1f s (timeout 0.5 s)" % took)
    if t.healthy("after the timeout"):
        os.kill(t.pid, signal.SIGUSR1)  # now it sleeps: PyEval_SaveThread must be intact
        if t.healthy("sleeping after the timeout") and t.finish("after the timeout"):
            print("inject_check: after the timeout (%.2f s): left running, restored: ok" % took)
finally:
    t.kill()

# ---- SIGTERM to the injector while it waits ----
t = Target(py, "busy", "sigterm")
try:
    q = subprocess.Popen([inject, str(t.pid), probe, "apx_attach_probe", t.out, "20000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    q.send_signal(signal.SIGTERM)
    out, err = q.communicate(timeout=10)
    if q.returncode != -signal.SIGTERM:
        fail("SIGTERM: injector exit %d (expected killed by SIGTERM), %r %r" % (
            q.returncode, out, err))
    if t.healthy("after SIGTERM to the injector"):
        os.kill(t.pid, signal.SIGUSR1)
        if t.healthy("sleeping after SIGTERM") and t.finish("after SIGTERM"):
            print("inject_check: SIGTERM to the injector: target restored, detached: ok")
finally:
    t.kill()

# ---- dlopen and dlsym failures: dlerror's text, the target unharmed ----
t = Target(py, "sleep", "dlfail")
try:
    r, _ = run(t.pid, lib=os.path.join(tmp, "no-such-lib.so"), arg=t.out)
    expect_err("dlopen failure", r, errno.ENOEXEC, "no-such-lib.so: cannot open shared object")
    r, _ = run(t.pid, func="apx_no_such_function", arg=t.out)
    expect_err("dlsym failure", r, errno.ENOEXEC, "has no function apx_no_such_function")
    if t.healthy("after dlopen/dlsym failures") and t.finish("after dlopen/dlsym failures"):
        print("inject_check: dlopen and dlsym failures: ok")
finally:
    t.kill()

# ---- refusals ----
gone = subprocess.Popen(["true"])
gone.wait()
expect_err("no such process", run(gone.pid)[0], errno.ESRCH, "no process %d" % gone.pid)
sl = subprocess.Popen(["sleep", "100"])
try:
    time.sleep(0.2)
    expect_err("not python", run(sl.pid)[0], errno.ENOENT, "is not a CPython process")
finally:
    sl.kill()
    sl.wait()

if os.geteuid() == 0 and shutil.which("setpriv"):
    exe = os.path.join(tmp, "test-inject-main")  # reachable by uid 65533 wherever the build is
    shutil.copy(inject, exe)
    os.chmod(exe, 0o755)
    t = Target(py, "sleep", "perm", prefix=("setpriv", "--reuid=65534", "--regid=65534",
                                            "--clear-groups"))
    try:
        r, _ = run(t.pid, arg=t.out, exe=exe,
                   prefix=("setpriv", "--reuid=65533", "--regid=65533", "--clear-groups"))
        expect_err("another user's process", r, errno.EPERM, "not allowed to trace process")
        t.healthy("another user's process")
    finally:
        t.kill()
else:
    print("inject_check: permission refusal not checked (not root, or no setpriv)")

# a tracer that only seizes (stops nothing): ptrace(PTRACE_SEIZE) through ctypes
TRACER = """import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:
    print("seize failed", ctypes.get_errno(), flush=True)
    sys.exit(1)
print("traced", flush=True)
time.sleep(60)
"""
t = Target(py, "sleep", "traced")
try:
    tr = subprocess.Popen([py, "-c", TRACER, str(t.pid)], stdout=subprocess.PIPE, text=True)
    line = tr.stdout.readline().strip()
    if line != "traced":
        fail("tracer: %r" % line)
    else:
        expect_err("already traced", run(t.pid, arg=t.out)[0], errno.EBUSY,
                   "is already traced by %d" % tr.pid)
    tr.kill()
    tr.wait()
    if t.healthy("after the other tracer left") and t.finish("after the other tracer left"):
        print("inject_check: already traced: refused, target unharmed: ok")
finally:
    t.kill()

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print("inject_check: FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print("inject_check: ok")
