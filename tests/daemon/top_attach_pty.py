# top_attach_pty.py - the A key of `apx top` on a pseudo-terminal (tests/daemon/test-basic.sh):
# A opens the PID prompt with the first row's PID as its default and Esc closes it; A, a typed
# PID and Enter run `apx attach` on it as a child, whose messages go to attach-PID.log in the
# current folder and whose end shows on the second line. Usage: python3 top_attach_pty.py APX
# PID (PID: a process that is not Python, so the attach fails at once, changing nothing).
import os
import re
import sys
import time

from ptyrun import Pty

apx, pid = sys.argv[1], sys.argv[2]
log = "attach-%s.log" % pid
t = Pty([apx, "top", "--delay", "0.3"], 100, 40)
t.read_for(1.0)
why = ""
t.send(b"A", 0.5)
if not re.search(rb"attach to PID \[[0-9]+\]: _  \(Enter starts, Esc cancels\)", t.out):
    why += "no prompt after A; "
t.send(b"\x1b", 0.5)
mark = len(t.out)
t.read_for(0.5)
if b"attach to PID [" in t.out[mark:]:
    why += "Esc left the prompt open; "
t.send(b"A" + pid.encode() + b"\r", 0.3)
end = time.time() + 10
want = ("attach to PID %s failed: see %s" % (pid, log)).encode()
while want not in t.out and time.time() < end:
    t.read_for(0.2)
if want not in t.out:
    why += "no %r on the screen; " % want
if b"attaching to PID " + pid.encode() not in t.out:
    why += "no 'attaching to PID' line; "
if not os.path.exists(log) or os.path.getsize(log) == 0:
    why += "%s missing or empty; " % log
elif b"apx attach" not in open(log, "rb").read():
    why += "%s does not say why: %r; " % (log, open(log, "rb").read()[:300])
t.send(b"q", 0.5)
for _ in range(30):     # a top that does not quit is killed, not waited for forever
    done, status = os.waitpid(t.pid, os.WNOHANG)
    if done:
        break
    t.read_for(0.1)
else:
    os.kill(t.pid, 9)
    status = t.wait()
if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and t.out.endswith(b"\x1b[?1049l")):
    why += "top did not quit cleanly (status %r); " % status
if why:
    sys.stderr.write("%sscreen:\n%r\n" % (why, t.out[-3000:]))
sys.exit(1 if why else 0)
