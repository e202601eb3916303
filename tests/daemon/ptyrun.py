# ptyrun.py - runs a command on a pseudo-terminal for the interactive tests (repl.py,
# top_pty.py): keystrokes in, everything the command drew kept in .out.
import fcntl
import os
import pty
import select
import struct
import termios
import time


class Pty:
    def __init__(self, argv, cols=0, rows=0):
        """Start argv on a new terminal; cols, rows: its size (default: none set, 0x0)."""
        self.out = b""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            if cols and rows:   # before exec: the command's first frame sees it
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execv(argv[0], argv)

    def read_for(self, secs):
        """Collect the command's output for secs seconds (or until it closes the terminal)."""
        end = time.time() + secs
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    return

    def send(self, keys, wait=0.3):
        os.write(self.fd, keys)
        self.read_for(wait)

    def wait(self):
        """The command's exit status (waitpid status)."""
        return os.waitpid(self.pid, 0)[1]
