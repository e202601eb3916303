#!/usr/bin/env python3
"""report-html.py - `apx report --format html` of a committed real trace renders in headless
Chromium (Debian's `chromium`, installed by scripts/setup): a PNG screenshot that is not
blank (decoded here with zlib: many colours, not one), and a DOM (--dump-dom) that holds
every section title of the text report and the plots' titles, with no script and nothing
fetched from the network. Also checks the page of the hostile-strings fixture for markup
from the trace. Called by ctest: APX SRCDIR. Exit 77 (skipped) only when chromium is not
installed and APX_REQUIRE_CHROMIUM is unset (scripts/test sets it: in CI it must run).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SECTIONS = [
    "Summary", "Findings (ranked by estimated saving)", "nvperfd (observed from outside)",
    "GPU kernels (by total time)", "Transfers (interconnect)", "Synchronization",
    "GPU idle time (between first and last activity, by cause)", "Memory",
    "Streams and overlap", "NVTX ranges (GPU kernel time executed inside each range)",
    "L2 persistence", "Unified memory", "CPU", "Checks", "How this was measured",
]
PLOTS = [
    "GPU busy per step", "Top kernels", "Transfer size vs bandwidth", "Idle time by cause",
    "Device memory in use over time", "One step&#39;s timeline",
]
TRACE = "tests/fixtures/real/sync_every_step.apx"


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG, stdlib only."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    if depth != 8 or ctype not in (2, 6):
        raise ValueError("unexpected PNG type %d/%d" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def chromium_run(chrome, args, tmp):
    base = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--user-data-dir=" + os.path.join(tmp, "profile")]
    return subprocess.run(base + args, capture_output=True, timeout=120)


def main():
    apx, src = sys.argv[1], sys.argv[2]
    os.chdir(src)
    chrome = find_chromium()
    if not chrome:
        msg = "chromium is not installed (apt-get install chromium; scripts/setup installs it)"
        if os.environ.get("APX_REQUIRE_CHROMIUM"):
            print("FAIL: " + msg)
            return 1
        print("SKIP: " + msg)
        return 77
    fail = 0
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "report.html")
        r = subprocess.run([apx, "report", "--format", "html", "-o", page, TRACE],
                           capture_output=True)
        if r.returncode != 0:
            print("FAIL: apx report --format html: exit %d: %s" % (r.returncode, r.stderr))
            return 1
        html = open(page, encoding="utf-8").read()
        for bad in ("<script", "src=\"http", "href=\"http", "@import", "url("):
            if bad in html:
                print("FAIL: the page is not self-contained: %r" % bad)
                fail = 1
        shot = os.path.join(tmp, "shot.png")
        r = chromium_run(chrome, ["--window-size=1280,4000", "--screenshot=" + shot,
                                  "file://" + page], tmp)
        if r.returncode != 0 or not os.path.exists(shot):
            print("FAIL: chromium --screenshot: exit %d: %s" % (r.returncode, r.stderr[-2000:]))
            return 1
        w, h, bpp, rows = png_pixels(open(shot, "rb").read())
        colours, sample = set(), 0
        for y in range(0, h, 7):
            row = rows[y]
            for x in range(0, w, 5):
                colours.add(row[x * bpp:x * bpp + 3])
                sample += 1
        lum = [sum(rows[y][x * bpp:x * bpp + 3]) / 3 for y in range(0, h, 7)
               for x in range(0, w, 5)]
        mean = sum(lum) / len(lum)
        var = sum((v - mean) ** 2 for v in lum) / len(lum)
        if len(colours) < 50 or var < 50:
            print("FAIL: the screenshot looks blank: %d colours, luminance variance %.1f"
                  % (len(colours), var))
            fail = 1
        r = chromium_run(chrome, ["--dump-dom", "file://" + page], tmp)
        dom = r.stdout.decode("utf-8", "replace")
        if r.returncode != 0 or "</html>" not in dom:
            print("FAIL: chromium --dump-dom: exit %d" % r.returncode)
            return 1
        for title in SECTIONS:
            esc = title.replace("&", "&amp;").replace("'", "&#39;")
            if "<h2>%s</h2>" % esc not in dom and "<h2>%s</h2>" % title not in dom:
                print("FAIL: section title missing from the DOM: %s" % title)
                fail = 1
        for title in PLOTS:
            plain = title.replace("&#39;", "'")
            if ("<figcaption>" + title) not in dom and ("<figcaption>" + plain) not in dom:
                print("FAIL: plot missing from the DOM: %s" % plain)
                fail = 1
        nsvg = dom.count("<svg")
        if nsvg < len(PLOTS):
            print("FAIL: %d plots drawn, want at least %d" % (nsvg, len(PLOTS)))
            fail = 1
        # a trace's names are text, never markup
        hostile = os.path.join(tmp, "hostile.html")
        subprocess.run([apx, "report", "--format", "html", "-o", hostile,
                        "tests/fixtures/corrupt/hostile-strings.apx"], capture_output=True)
        text = open(hostile, "rb").read()
        if b"\x1b" in text or b"<script" in text or "evil_kernel" not in text.decode("utf-8"):
            print("FAIL: hostile-strings.apx: the page holds raw control bytes or markup")
            fail = 1
        if not fail:
            print("report-html: %s renders in %s: %dx%d screenshot, %d colours, %d plots, "
                  "%d section titles" % (TRACE, os.path.basename(chrome), w, h, len(colours),
                                         nsvg, len(SECTIONS)))
    return fail


if __name__ == "__main__":
    sys.exit(main())
