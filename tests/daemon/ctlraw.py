# ctlraw.py - a raw client of nvperfd's control socket for test-hardening.sh (no apx: it reads
# to EOF, as any client may, so a connection reset instead of a clean end is seen). Usage:
#   ctlraw.py SOCKET TEXT     send TEXT (Python escapes allowed), print what came back (repr),
#                             then "eof" or "reset"
#   ctlraw.py SOCKET hold N   open N connections that send nothing, print "held", wait on stdin
#   ctlraw.py SOCKET burst N  N clients at once, each sending "apx1 ping" and reading to EOF;
#                             prints "ok K refused R reset X empty Y" (refused: the whole "too
#                             many clients" answer, then EOF)
#   ctlraw.py SOCKET ping N   N pings one after another; prints the slowest answer's seconds
import socket
import sys
import threading
import time


def burst(path, n):
    res = [None] * n
    go = threading.Barrier(n)

    def one(i):
        try:
            go.wait(30)
        except threading.BrokenBarrierError:
            pass
        data = b""
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(path)
            try:
                s.sendall(b"apx1 ping\n")
            except BrokenPipeError:
                pass  # refused before it sent: its answer is there to read
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
            s.close()
        except ConnectionResetError:
            res[i] = "reset"
            return
        except OSError as e:
            res[i] = "error %s" % e
            return
        if data.startswith(b"ok") and data.endswith(b"end\n"):
            res[i] = "ok"
        elif data == b"err\ttoo many clients; try again\nend\n":
            res[i] = "refused"
        elif not data:
            res[i] = "empty"
        else:
            res[i] = "bad %r" % data[:60]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("ok %d refused %d reset %d empty %d" % (res.count("ok"), res.count("refused"),
                                                  res.count("reset"), res.count("empty")))
    other = [r for r in res if r not in ("ok", "refused", "reset", "empty")]
    if other:
        print("other: %s" % other[:5])


def pings(path, n):
    worst = 0.0
    for _ in range(n):
        t0 = time.monotonic()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(path)
        s.sendall(b"apx1 ping\n")
        while s.recv(65536):
            pass
        s.close()
        worst = max(worst, time.monotonic() - t0)
        time.sleep(0.01)
    print("%.3f" % worst)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def main():
    path = sys.argv[1]
    if sys.argv[2] == "burst":
        burst(path, int(sys.argv[3]))
        return
    if sys.argv[2] == "ping":
        pings(path, int(sys.argv[3]))
        return
    if sys.argv[2] == "hold":
        socks = [connect(path) for _ in range(int(sys.argv[3]))]
        print("held", flush=True)
        sys.stdin.read()
        for s in socks:
            s.close()
        return
    s = connect(path)
    s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
    data, end = b"", "eof"
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except ConnectionResetError:
        end = "reset"
    print(repr(data.decode("utf-8", "replace")))
    print(end)


main()
