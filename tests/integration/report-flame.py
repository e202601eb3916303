#!/usr/bin/env python3
"""report-flame.py - the flame graphs of `apx report` (lib/report/flame.h) on a trace whose
stacks and times are known (stacks-gen): the JSON "flame" member's values (GPU time under each
launch stack, host samples by thread and state), the HTML's two inline SVG icicles (widths
proportional to time, library frames muted, the markup in a function name escaped, a long
name cut with its full text in <title>, the same bytes twice), the text report's top paths,
and the page rendered in headless Chromium (a screenshot with the flame graphs' colours,
saved as report-flame.png in the working directory). Called by ctest: APX STACKS_GEN SRCDIR.
Exit 77 (skipped) only when chromium is missing and APX_REQUIRE_CHROMIUM is unset.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

apx, gen, src = sys.argv[1:4]
spec = importlib.util.spec_from_file_location(
    "report_html", os.path.join(src, "tests", "integration", "report-html.py"))
rh = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rh)
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
    return ok


def run(*args):
    return subprocess.run([apx, *args], capture_output=True, text=True)


def rect_width(html, name):
    """The width of the first box whose <title> starts with name."""
    m = re.search(r"<g><title>" + re.escape(name) + r"[^<]*</title><rect [^>]*width=\"([0-9.]+)\"",
                  html)
    return float(m.group(1)) if m else None


def main():
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "stacks.apx")
        if subprocess.run([gen, trace]).returncode != 0:
            print("FAIL: stacks-gen")
            return 1
        # JSON
        r = run("report", "--format", "json", trace)
        check(r.returncode == 0, f"report json: exit {r.returncode}: {r.stderr}")
        flame = json.loads(r.stdout).get("flame") if r.returncode == 0 else None
        if check(flame is not None, "no flame member in the JSON report"):
            gpu, host = flame["gpu"], flame["host"]
            check(gpu["value"] == 2660000, f"gpu root {gpu['value']}, want 2660000")
            train = gpu["children"][0]
            check((train["name"], train["file"], train["line"], train["value"]) ==
                  ("train", "/home/u/train.py", 10, 2650000), f"gpu first child {train}")
            kids = [(c["name"], c["value"], c["library"]) for c in train["children"]]
            check(kids[:2] == [("loss_fn", 1500000, False), ("Model.forward", 1000000, False)],
                  f"under train: {kids}")
            fwd = train["children"][1]["children"]
            check([(c["name"], c["value"], c["library"]) for c in fwd] ==
                  [("linear", 1000000, True)], f"under forward: {fwd}")
            check(host["value"] == 36 * 5000000, f"host root {host['value']}")
            threads = {c["name"]: c for c in host["children"]}
            main_t = threads.get("python3 (tid 4242, pid 4242)")
            if check(main_t is not None, f"host threads {list(threads)}"):
                states = {c["name"]: c["value"] for c in main_t["children"]}
                check(states == {"running": 21 * 5000000, "waiting": 10 * 5000000},
                      f"main thread states {states}")

        def nodes(t):
            return 1 + sum(nodes(c) for c in t["children"])
        check(flame is None or nodes(flame["gpu"]) <= 400, "JSON flame over its cap")
        # text: the top paths
        r = run("report", "--section", "hotspots", "--color", "never", trace)
        check("56.4% train (train.py:10) > loss_fn (model.py:50)" in r.stdout,
              "text: top path missing:\n" + r.stdout)
        check(all(len(line) <= 100 for line in r.stdout.splitlines()), "text over 100 columns")
        # HTML
        pages = []
        for k in range(2):
            page = os.path.join(tmp, f"r{k}.html")
            r = run("report", "--format", "html", "-o", page, trace)
            check(r.returncode == 0, f"report html: exit {r.returncode}: {r.stderr}")
            pages.append(open(page, encoding="utf-8").read() if r.returncode == 0 else "")
        html = pages[0]
        check(pages[0] == pages[1], "the HTML differs between two runs")
        check(html.count('<figure class="flame"') == 2, "not two flame graphs")
        check('id="flame-gpu"' in html and 'id="flame-host"' in html, "flame ids")
        check("<script" not in html, "markup from the trace reached the page")
        check("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;" in html,
              "the hostile function name is not escaped as expected")
        groups = html.count("<g>")
        check(groups > 10 and groups == html.count("<g><title>"), "a box without a <title>")
        check("very_long_" + "f" * 290 in html, "the long name's full text is not in a title")
        check(re.search(r"<title>pt_autograd_0 \(tid 4250, pid 4242\)\n[^<]*</title><rect [^>]*/>"
                        r"<text [^>]*>pt_autograd_0 \(tid[^<]*&#8230;</text>", html) is not None,
              "a name wider than its box is not cut there, with its whole text in <title>")
        root = rect_width(html, "all kernels")
        loss, fwd = rect_width(html, "loss_fn (model.py:50)"), rect_width(html, "Model.forward")
        if check(None not in (root, loss, fwd), "boxes missing"):
            check(abs(root - 1099.4) < 0.05, f"root width {root}")
            check(abs((loss + 0.6) / (fwd + 0.6) - 1.5) < 0.01, f"loss/forward {loss}/{fwd}")
        m = re.search(r"<title>linear \(functional\.py:200\)[^<]*</title><rect [^>]*fill=\"hsl\("
                      r"(\d+),(\d+)%", html)
        check(m is not None and int(m.group(2)) <= 20, "the library frame is not muted")
        # Chromium
        chrome = rh.find_chromium()
        if not chrome:
            msg = "chromium is not installed"
            if os.environ.get("APX_REQUIRE_CHROMIUM"):
                fails.append(msg)
            else:
                print("SKIP (screenshot): " + msg)
                if fails:
                    print("FAIL: " + "\n".join(fails))
                    return 1
                return 77
        else:
            page = os.path.join(tmp, "flame.html")
            run("report", "--format", "html", "--section", "hotspots", "--section", "threads",
                "-o", page, trace)
            shot = os.path.join(tmp, "shot.png")
            r = rh.chromium_run(chrome, ["--window-size=1280,1300", "--screenshot=" + shot,
                                         "file://" + page], tmp)
            if check(r.returncode == 0 and os.path.exists(shot), "chromium --screenshot"):
                shutil.copy(shot, "report-flame.png")
                w, h, bpp, rows = rh.png_pixels(open(shot, "rb").read())
                warm = blue = 0
                colours = set()
                for y in range(0, h, 3):
                    row = rows[y]
                    for x in range(0, w * bpp, bpp * 3):
                        px = row[x], row[x + 1], row[x + 2]
                        colours.add(px)
                        warm += px[0] > 200 and 100 < px[1] < 200 and px[2] < 130
                        blue += px[2] > 180 and px[0] < 150 and px[1] < 170
                check(len(colours) > 40, f"screenshot: {len(colours)} colours")
                check(warm > 200, f"screenshot: {warm} warm pixels (the flame graph's)")
                check(blue > 50, f"screenshot: {blue} blue pixels (waiting samples)")
    if fails:
        print("FAIL: " + "\n".join(fails))
        return 1
    print("report-flame: JSON, text, HTML and the screenshot as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
