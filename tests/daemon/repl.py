# repl.py - drives `apx config` on a pseudo-terminal (tests/daemon/test-reload.sh): Tab
# completion of a command and a key, a set, history recall with the up arrow, quit. Usage:
# python3 repl.py APX FILE; exits 0 when the file ends with notice = none after the session.
import os, pty, sys, time, select

apx, path = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(apx, [apx, "config", "--file", path])

out = b""
def read_for(secs):
    global out
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                return

def send(b):
    os.write(fd, b)
    read_for(0.3)

read_for(0.5)
send(b"se\t")                 # -> "set "
send(b"noti\t")               # -> "set notice "
send(b"tty\r")
send(b"get notice\r")
send(b"set notice none\r")
send(b"\x1b[A\x1b[A\x1b[A")   # history: back to "set notice tty"
send(b"\x15")                 # (Ctrl-U is ignored) ...
send(b"\r")                   # runs "set notice tty" again
send(b"set notice none\r")
send(b"quit\r")
read_for(0.5)
_, status = os.waitpid(pid, 0)
text = open(path).read()
ok = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and b"set notice " in out
      and b"tty" in out and text.strip().endswith("notice = none"))
if not ok:
    sys.stderr.write("session:\n%r\nfile:\n%s\n" % (out, text))
sys.exit(0 if ok else 1)
