# repl.py - drives `apx config` on a pseudo-terminal (tests/daemon/test-reload.sh): Tab
# completion of a command and a key, a set, history recall with the up arrow, quit. Usage:
# python3 repl.py APX FILE; exits 0 when the file ends with notice = none after the session.
import os
import sys

from ptyrun import Pty

apx, path = sys.argv[1], sys.argv[2]
t = Pty([apx, "config", "--file", path])
t.read_for(0.5)
t.send(b"se\t")                 # -> "set "
t.send(b"noti\t")               # -> "set notice "
t.send(b"tty\r")
t.send(b"get notice\r")
t.send(b"set notice none\r")
t.send(b"\x1b[A\x1b[A\x1b[A")   # history: back to "set notice tty"
t.send(b"\x15")                 # (Ctrl-U is ignored) ...
t.send(b"\r")                   # runs "set notice tty" again
t.send(b"set notice none\r")
t.send(b"quit\r")
t.read_for(0.5)
status = t.wait()
text = open(path).read()
ok = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and b"set notice " in t.out
      and b"tty" in t.out and text.strip().endswith("notice = none"))
if not ok:
    sys.stderr.write("session:\n%r\nfile:\n%s\n" % (t.out, text))
sys.exit(0 if ok else 1)
