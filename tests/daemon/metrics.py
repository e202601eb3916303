# metrics.py - the HTTP client of test-metrics.sh (raw sockets: no curl needed). Each command
# prints what the shell test asserts on and exits 1 with a message when the exchange itself is
# wrong. ADDR is "127.0.0.1:PORT" or "[::1]:PORT".
#   scrape ADDR [PATH [RAW]] GET; prints "status CODE", "type CONTENT-TYPE", then the body's
#                          sample lines; checks the body against the exposition format 0.0.4;
#                          the whole body into the file RAW
#   raw ADDR TEXT          sends TEXT (Python escapes allowed, e.g. \r\n), prints the status line
#   idle ADDR              a client that sends nothing; a scrape meanwhile must succeed; prints
#                          the seconds until the daemon dropped it and what it said then
#   concurrent ADDR N      N connections at once, then N requests; prints "ok K refused R"
#                          (refused: a whole 503 answer then EOF; a reset is an error)
#   burst ADDR N           N clients at once, each connecting, sending its request and reading
#                          to EOF; prints "ok K refused R none X reset Y" (none: EOF without a
#                          byte, or no connection at all; the daemon must answer every one)
#   lockout ADDR N S       N silent connections, each re-opened as soon as the daemon closes
#                          it, for S seconds, while scraping every 0.2 s; prints
#                          "scrapes ok K failed F"
#   slow ADDR              a client with a tiny receive buffer that reads late and slowly;
#                          checks the whole answer arrives intact
#   port                   a free TCP port on 127.0.0.1
#   refused ADDR           exits 0 when nothing listens on ADDR
import re
import socket
import sys
import threading
import time

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LVALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
LABELS = r"\{(?:[a-zA-Z_][a-zA-Z0-9_]*=" + LVALUE + r"(?:,[a-zA-Z_][a-zA-Z0-9_]*=" + LVALUE + r")*)?\}"
VALUE = r"(?:[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?Inf|NaN)"
SAMPLE = re.compile(r"^(" + NAME + r")(" + LABELS + r")? (" + VALUE + r")$")
HELP = re.compile(r"^# HELP (" + NAME + r") .+$")
TYPE = re.compile(r"^# TYPE (" + NAME + r") (counter|gauge|histogram|summary|untyped)$")


def die(msg):
    print("metrics.py: " + msg, file=sys.stderr)
    sys.exit(1)


def addr_of(text):
    m = re.match(r"^\[(.*)\]:(\d+)$", text)
    if m:
        return socket.AF_INET6, (m.group(1), int(m.group(2)))
    host, port = text.rsplit(":", 1)
    return socket.AF_INET, (host, int(port))


def connect(text, rcvbuf=None):
    fam, a = addr_of(text)
    s = socket.socket(fam, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(a)
    return s


def read_all(s, pause=0.0, chunk=65536):
    data = b""
    while True:
        b = s.recv(chunk)
        if not b:
            return data
        data += b
        if pause:
            time.sleep(pause)


def split(data, is_head=False):
    """HTTP/1.0 answer -> (code, headers dict, body); checks Content-Length (the length the
    body would have, for HEAD)."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        die("no end of headers in %r" % data[:200])
    lines = head.decode("ascii").split("\r\n")
    m = re.match(r"^HTTP/1\.0 (\d{3}) [A-Za-z ]+$", lines[0])
    if not m:
        die("bad status line %r" % lines[0])
    hdr = {}
    for line in lines[1:]:
        k, _, v = line.partition(": ")
        hdr[k.lower()] = v
    if is_head and body:
        die("a body after HEAD")
    if not is_head and "content-length" in hdr and int(hdr["content-length"]) != len(body):
        die("Content-Length %s but %d bytes of body" % (hdr["content-length"], len(body)))
    return int(m.group(1)), hdr, body


def get(addr, path="/metrics", rcvbuf=None, wait=0.0, pause=0.0, chunk=65536):
    s = connect(addr, rcvbuf)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: test\r\n\r\n" % path).encode())
    if wait:
        time.sleep(wait)
    data = read_all(s, pause, chunk)
    s.close()
    return split(data)


def check_format(body):
    """Every line a sample, # HELP or # TYPE; each family's HELP and TYPE before its samples,
    its samples together, no series twice. Returns the sample lines."""
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        die("the body is not ASCII")
    if not text.endswith("\n"):
        die("the body does not end with a newline")
    helped, typed, done, series, samples = set(), set(), set(), set(), []
    current = None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        if line.startswith("#"):
            m = HELP.match(line) or TYPE.match(line)
            if not m:
                die("line %d: bad comment %r" % (n, line))
            (helped if line.startswith("# HELP") else typed).add(m.group(1))
            continue
        m = SAMPLE.match(line)
        if not m:
            die("line %d: not NAME{LABELS} VALUE: %r" % (n, line))
        name = m.group(1)
        if name not in helped or name not in typed:
            die("line %d: %s without # HELP and # TYPE before it" % (n, name))
        if name != current:
            if name in done:
                die("line %d: samples of %s are not together" % (n, name))
            if current:
                done.add(current)
            current = name
        key = name + (m.group(2) or "")
        if key in series:
            die("line %d: series twice: %s" % (n, key))
        series.add(key)
        samples.append(line)
    return samples


def cmd_scrape(addr, path="/metrics", raw=None):
    code, hdr, body = get(addr, path)
    if raw:
        with open(raw, "wb") as f:
            f.write(body)
    print("status %d" % code)
    print("type %s" % hdr.get("content-type", ""))
    if code == 200:
        for line in check_format(body):
            print(line)
    else:
        sys.stdout.write(body.decode("ascii", "replace"))


def cmd_raw(addr, text):
    s = connect(addr)
    s.sendall(text.encode().decode("unicode_escape").encode("latin-1"))
    data = read_all(s)
    s.close()
    code, hdr, body = split(data, text.startswith("HEAD "))
    print("status %d %s" % (code, hdr.get("allow", "")))
    sys.stdout.write(body.decode("ascii", "replace"))


def cmd_idle(addr):
    s = connect(addr)
    t0 = time.monotonic()
    time.sleep(0.5)
    t1 = time.monotonic()
    code, _, body = get(addr)
    if code != 200 or b"nvperfd_uptime_seconds" not in body:
        die("scrape beside an idle client: status %d" % code)
    print("scrape beside it took %.3f s" % (time.monotonic() - t1))
    try:
        data = read_all(s)
    except ConnectionResetError:
        data = b"reset"
    print("dropped after %.2f s" % (time.monotonic() - t0))
    print("said %s" % (data.split(b"\r\n")[0].decode("ascii", "replace") or "nothing"))


def cmd_concurrent(addr, n):
    socks = []
    for _ in range(n):  # each starts its request: not silent, so not evicted for the next
        s = connect(addr)
        s.sendall(b"GET /metrics HTTP/1.0\r\n")
        socks.append(s)
    time.sleep(0.5)  # the daemon has accepted (or refused) them all before any request ends
    res = [None] * n

    def one(i):
        s = socks[i]
        try:
            s.sendall(b"\r\n")
            data = read_all(s)
        except (ConnectionResetError, BrokenPipeError) as e:
            res[i] = "reset (%s)" % e
            return
        if data.startswith(b"HTTP/1.0 503 "):
            code, hdr, body = split(data)
            res[i] = "refused" if body == b"too many connections\n" else "bad 503 %r" % data
            return
        code, _, body = split(data)
        check_format(body)
        res[i] = "ok" if code == 200 and body.endswith(b"nvperfd_metrics_truncated 0\n") else \
            "bad %d" % code

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = [r for r in res if r not in ("ok", "refused")]
    if bad:
        die("answers: %s" % bad)
    print("ok %d refused %d" % (res.count("ok"), res.count("refused")))


def cmd_burst(addr, n):
    res = [None] * n
    go = threading.Barrier(n)

    def one(i):
        try:
            go.wait(30)
        except threading.BrokenBarrierError:
            pass
        try:
            s = connect(addr)
            s.settimeout(30)
            s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            data = read_all(s)
            s.close()
        except (ConnectionResetError, BrokenPipeError):
            res[i] = "reset"
            return
        except OSError as e:
            res[i] = "none (%s)" % e
            return
        if data.startswith(b"HTTP/1.0 200 ") and data.endswith(b"nvperfd_metrics_truncated 0\n"):
            res[i] = "ok"
        elif data.startswith(b"HTTP/1.0 503 ") and data.endswith(b"too many connections\n"):
            res[i] = "refused"
        elif not data:
            res[i] = "none"
        else:
            res[i] = "bad %r" % data[:80]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other = [r for r in res if r not in ("ok", "refused", "none", "reset")]
    print("ok %d refused %d none %d reset %d" % (res.count("ok"), res.count("refused"),
                                                   sum(1 for r in res if r.startswith("none")),
                                                   res.count("reset")))
    if other or any(r.startswith("none (") for r in res):
        print("other: %s" % (other + [r for r in res if r.startswith("none (")])[:5])


def cmd_lockout(addr, n, seconds):
    stop = time.monotonic() + seconds
    socks = [connect(addr) for _ in range(n)]
    for s in socks:
        s.setblocking(False)
    time.sleep(0.3)
    ok = failed = 0
    errors = []
    while time.monotonic() < stop:
        for i, s in enumerate(socks):  # re-open the ones the daemon closed
            try:
                gone = s.recv(4096) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                s.close()
                socks[i] = connect(addr)
                socks[i].setblocking(False)
        try:
            code, _, body = get(addr)
            if code == 200 and body.endswith(b"nvperfd_metrics_truncated 0\n"):
                ok += 1
            else:
                failed += 1
                errors.append(code)
        except OSError as e:
            failed += 1
            errors.append(str(e))
        time.sleep(0.2)
    for s in socks:
        s.close()
    print("scrapes ok %d failed %d" % (ok, failed))
    if errors:
        print("errors: %s" % errors[:5])


def cmd_slow(addr):
    t0 = time.monotonic()
    code, _, body = get(addr, rcvbuf=4096, wait=1.0, pause=0.002, chunk=4096)
    if code != 200:
        die("status %d" % code)
    samples = check_format(body)
    if samples[-1] != "nvperfd_metrics_truncated 0":
        die("the answer does not end with the truncation gauge: %r" % samples[-1])
    print("read %d bytes, %d samples, in %.2f s" % (len(body), len(samples),
                                                   time.monotonic() - t0))


def cmd_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def cmd_refused(addr):
    try:
        connect(addr).close()
    except ConnectionRefusedError:
        sys.exit(0)
    die("%s accepts connections" % addr)


if __name__ == "__main__":
    cmds = {"scrape": cmd_scrape, "raw": cmd_raw, "idle": cmd_idle, "slow": cmd_slow,
            "concurrent": lambda a, n: cmd_concurrent(a, int(n)), "port": cmd_port,
            "lockout": lambda a, n, t: cmd_lockout(a, int(n), float(t)),
            "burst": lambda a, n: cmd_burst(a, int(n)),
            "refused": cmd_refused}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        die("usage: see the top of this file")
    cmds[sys.argv[1]](*sys.argv[2:])
