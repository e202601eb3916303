# ctlraw.py - a raw client of nvperfd's control socket for test-hardening.sh (no apx: it reads
# to EOF, as any client may, so a connection reset instead of a clean end is seen). Usage:
#   ctlraw.py SOCKET TEXT     send TEXT (Python escapes allowed), print what came back (repr),
#                             then "eof" or "reset"
#   ctlraw.py SOCKET hold N   open N connections that send nothing, print "held", wait on stdin
import socket
import sys


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def main():
    path = sys.argv[1]
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
