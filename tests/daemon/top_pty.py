# top_pty.py - drives `apx top` on a pseudo-terminal (tests/daemon/test-basic.sh): it draws,
# re-sorts on 'm', and quits on 'q' with status 0, restoring the screen. Usage:
# python3 top_pty.py APX PID (PID: a tracked process that must appear on the screen).
import os
import sys

from ptyrun import Pty

apx, pid_shown = sys.argv[1], sys.argv[2].encode()
t = Pty([apx, "top", "--delay", "0.3"])
t.read_for(1.0)
t.send(b"m", 0.5)
t.send(b"q", 0.5)
status = t.wait()
ok = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and b"apx top" in t.out
      and b"sort: rss" in t.out and pid_shown in t.out and t.out.endswith(b"\x1b[?1049l"))
if not ok:
    sys.stderr.write("status %r, screen:\n%r\n" % (status, t.out[-2000:]))
sys.exit(0 if ok else 1)
