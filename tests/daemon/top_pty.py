# top_pty.py - drives `apx top` on a pseudo-terminal (tests/daemon/test-basic.sh,
# test-nvml.sh): it draws, re-sorts on 'm' and 'g', and quits on 'q' with status 0, restoring
# the screen. Usage: python3 top_pty.py APX PID [COLUMNS [TEXT...]] (PID: a tracked process
# that must appear on the screen; with COLUMNS the terminal is COLUMNS x 40, no drawn line may
# be wider, and each TEXT must appear in one frame).
import os
import re
import sys

from ptyrun import Pty

apx, pid_shown = sys.argv[1], sys.argv[2].encode()
cols = int(sys.argv[3]) if len(sys.argv) > 3 else 0
wants = [w.encode() for w in sys.argv[4:]]
t = Pty([apx, "top", "--delay", "0.3"], cols, 40 if cols else 0)
t.read_for(1.0)
t.send(b"m", 0.5)
t.send(b"g", 0.5)
t.send(b"q", 0.5)
status = t.wait()
ok = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and b"apx top" in t.out
      and b"sort: rss" in t.out and b"sort: gpu" in t.out and pid_shown in t.out
      and t.out.endswith(b"\x1b[?1049l"))
# the frames without their escape sequences, one line per screen line
text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", t.out).replace(b"\r", b"")
lines = text.split(b"\n")
why = ""
for w in wants:
    if not any(w in line for line in lines):
        why += "missing %r; " % w
if cols and max(len(line) for line in lines) > cols:
    why += "a line is wider than %d: %r; " % (cols, max(lines, key=len))
if not ok or why:
    sys.stderr.write("%sstatus %r, screen:\n%r\n" % (why, status, t.out[-3000:]))
sys.exit(0 if ok and not why else 1)
