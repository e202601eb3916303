# top_pty.py - drives `apx top` on a pseudo-terminal (tests/daemon/test-basic.sh): it draws,
# re-sorts on 'm', and quits on 'q' with status 0, restoring the screen. Usage:
# python3 top_pty.py APX PID (PID: a tracked process that must appear on the screen).
import os, pty, select, sys, time

apx, pid_shown = sys.argv[1], sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(apx, [apx, "top", "--delay", "0.3"])
out = b""
def read_for(secs):
    global out
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 65536)
            except OSError:
                return
read_for(1.0)
os.write(fd, b"m")
read_for(0.5)
os.write(fd, b"q")
read_for(0.5)
_, status = os.waitpid(pid, 0)
ok = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and b"apx top" in out
      and b"sort: rss" in out and pid_shown in out and out.endswith(b"\x1b[?1049l"))
if not ok:
    sys.stderr.write("status %r, screen:\n%r\n" % (status, out[-2000:]))
sys.exit(0 if ok else 1)
