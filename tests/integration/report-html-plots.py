#!/usr/bin/env python3
"""report-html-plots.py - the tables and plots of `apx report --format html` on committed real
traces (tests/fixtures/suite, real, hwc, sample.apx), read back with
html.parser:

- names: no table cell shows more than NAME_MAX characters unless it is prose (it wraps); a
  shortened cell has the whole text as its title (the visible part is in it), and a shortened
  kernel's title is its whole name as the JSON report has it;
- axes: every tick label is a number with an SI prefix and the column's unit ("2 TB/s",
  "500 MB", "1.5 ms", "40%"), never "2.13e+12", and the ticks of a linear axis are a round
  step apart (1, 2 or 5 x 10^k);
- series: every metric series of the trace (its Chrome export's counters) is plotted or named
  in the page's note "N more metric series not plotted: ...";
- gaps: each metric plot has as many polylines (lines) as the document's series (CSV) has
  runs of samples without a gap of more than 3 sampling periods;
- one time range: every time plot of a page has the same time ticks, and the device memory
  line reaches the right end (its last value held);
- the one-step timeline's tooltips show demangled names ("_Z..." never);
- all of it escaped: tests/fixtures/corrupt/hostile-strings.apx puts no markup on the page.

Then headless Chromium renders each line plot of three pages alone (report-html.py's
helpers): its screenshot holds the line's colour. Without chromium that part is skipped with a
message (a failure when APX_REQUIRE_CHROMIUM is set); the checks above always run. Called by
ctest: APX SRCDIR.
"""
import csv
import html.parser
import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import fixture_traces

NAME_MAX = 80
ELL = "\u2026"
TICK = re.compile(r"^-?\d+(\.\d+)?(%| (ns|\u00b5s|ms|s|[kMGTP]?B(/s)?|[kMGTP]))?$")
TIMELINE = "One step's timeline"
SYMBOL = re.compile(r"^([^<( ]+ ){0,2}[^<( ]+[<(]")   # "void ns::f<...>(...)": not prose

spec = importlib.util.spec_from_file_location(
    "rh", os.path.join(os.path.dirname(os.path.abspath(__file__)), "report-html.py"))
rh = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rh)


class Page(html.parser.HTMLParser):
    """Table cells, notes and figures (caption, ticks, series lines, timeline titles)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells, self.notes, self.figs = [], [], []
        self.cur = None         # [tag, text, attrs] being read
        self.fig = None
        self.section = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
        if tag == "figure":
            self.fig = {"caption": "", "ticks": [], "lines": [], "dots": 0, "titles": []}
            self.figs.append(self.fig)
        elif tag == "polyline" and self.fig is not None and a.get("class") == "series":
            pts = [tuple(map(float, p.split(","))) for p in a["points"].split()]
            self.fig["lines"].append(pts)
        elif tag == "circle" and self.fig is not None and a.get("r") == "1.5":
            self.fig["dots"] += 1
        elif tag in ("td", "figcaption", "title") or (tag == "text" and a.get("class") == "tick") \
                or (tag == "p" and a.get("class") == "note"):
            self.cur = [tag, "", a]

    def handle_endtag(self, tag):
        if tag == "figure":
            self.fig = None
        if not self.cur or self.cur[0] != tag:
            return
        kind, text, a = self.cur
        self.cur = None
        if kind == "td":
            self.cells.append((text, a.get("title"), self.section))
        elif kind == "p":
            self.notes.append(text)
        elif kind == "figcaption" and self.fig is not None:
            self.fig["caption"] = text
        elif kind == "text" and self.fig is not None:
            self.fig["ticks"].append((text, a.get("text-anchor"), float(a["x"]), float(a["y"])))
        elif kind == "title" and self.fig is not None:
            self.fig["titles"].append(text)

    def handle_data(self, data):
        if self.cur:
            self.cur[1] += data


def yticks(f):
    """The y axis's ticks: right-aligned left of the plotting area (x = 90)."""
    return [t for t in f["ticks"] if t[1] == "end" and t[2] < 90]


def xticks(f):
    return [t for t in f["ticks"] if not (t[1] == "end" and t[2] < 90)]


def number(label):
    return float(re.match(r"-?\d+(\.\d+)?", label).group(0))


def round_step(values):
    """The ticks of a linear axis: equal steps of 1, 2 or 5 x 10^k (None when fine)."""
    if len(values) < 2:
        return None
    steps = [b - a for a, b in zip(values, values[1:])]
    s = steps[0]
    if s <= 0 or any(abs(x - s) > 1e-6 * max(1, abs(s)) for x in steps):
        return "uneven steps %s" % values
    m = s / 10 ** math.floor(math.log10(s) + 1e-9)
    if not any(abs(m - k) < 1e-6 for k in (1, 2, 5, 10)):
        return "step %g is not 1, 2 or 5 x 10^k" % s
    return None


def runs(times, ends):
    """Runs of samples without a gap of more than 3 sampling periods (as html_plot.c)."""
    d = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    if not d:
        return 1
    gap = 3 * d[len(d) // 2]
    return 1 + sum(1 for i in range(1, len(times)) if times[i] - ends[i - 1] > gap)


def csv_tables(text):
    out, name, rows = {}, None, []
    for line in text.splitlines():
        if line.startswith("# "):
            if name:
                out[name] = rows
            name, rows = line[2:], []
        elif line and name:
            rows.append(line)
    if name:
        out[name] = rows
    return {k: list(csv.DictReader(io.StringIO("\n".join(v)))) for k, v in out.items()}


def counters(apx, trace, tmp):
    path = os.path.join(tmp, "c.json")
    r = subprocess.run([apx, "export", "--format", "chrome", "--force", "-o", path, trace],
                       capture_output=True)
    if r.returncode > 1 or not os.path.exists(path):
        return None
    d = json.load(open(path))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    names = {re.sub(r" \(pid \d+\)$", "", e["name"]) for e in ev if e.get("ph") == "C"}
    return {n for n in names if not n.startswith(("torch.", "process.", "nic.", "ib.",
                                                  "device memory"))}


def check_page(apx, trace, tmp, say):
    page = os.path.join(tmp, "p.html")
    r = subprocess.run([apx, "report", "--format", "html", "--force", "-o", page, trace],
                       capture_output=True)
    if r.returncode > 1:
        return say("apx report --format html: exit %d" % r.returncode)
    text = open(page, encoding="utf-8").read()
    p = Page()
    p.feed(text)
    # names
    shown = set()
    for vis, title, _ in p.cells:
        shown.add(vis)
        if title is not None:
            shown.add(title)
            if vis == title or vis.rstrip(ELL) not in title or len(vis) > NAME_MAX + 1:
                say("cell %r: title %r does not hold it whole" % (vis[:60], title[:60]))
        elif len(vis) > NAME_MAX and (vis.count(" ") < 3 or SYMBOL.match(vis)):
            say("cell of %d characters without a title: %r" % (len(vis), vis[:90]))
    rj = subprocess.run([apx, "report", "--format", "json", trace], capture_output=True)
    kernels = json.loads(rj.stdout).get("kernels") or [] if rj.returncode <= 1 and rj.stdout else []
    undemangled = [k["name"] for k in kernels if k["name"].startswith("_Z")]  # c++filt can't
    names = {k["name"] for k in kernels}
    plain = [n for n in names if n.isprintable() and "\ufffd" not in n]  # the rest is escaped
    kcells = [(vis, title) for vis, title, sec in p.cells if sec == "kernels"]
    if plain and not any(title in names or vis in names for vis, title in kcells):
        say("no kernel name of the JSON report in the kernels section whole")
    for vis, title in kcells:   # a shortened kernel name: its title is the JSON report's name
        if title and title.startswith("void ") and "::" in title and title not in names:
            say("shortened kernel %r: title %r is no kernel's whole name" % (vis, title[:80]))
    # axes
    for f in p.figs:
        for label, _, _, _ in f["ticks"]:
            if not TICK.match(label):
                say("%s: tick label %r" % (f["caption"][:40], label))
        if f["lines"]:
            ys = [number(t[0]) for t in sorted(yticks(f), key=lambda t: -t[3])]
            xs = [number(t[0]) for t in sorted(xticks(f), key=lambda t: t[2])]
            for what, vals in (("y", ys), ("x", xs)):
                bad = round_step(vals)
                if bad:
                    say("%s: %s axis: %s" % (f["caption"][:50], what, bad))
    # series
    names = counters(apx, trace, tmp)
    if names is not None:
        caps = " | ".join(f["caption"] for f in p.figs)
        notes = " | ".join(n for n in p.notes if "not plotted" in n)
        for n in sorted(names):
            if ("Metric %s (" % n) not in caps and n not in notes:
                say("metric series %r neither plotted nor named" % n)
    # gaps, against the document's series
    rc = subprocess.run([apx, "report", "--format", "csv", trace], capture_output=True)
    tabs = csv_tables(rc.stdout.decode("utf-8", "replace")) if rc.returncode <= 1 else {}
    metric_figs = [f for f in p.figs if f["caption"].startswith("Metric ")]
    metric_tabs = [v for k, v in tabs.items() if re.match(r".*/metric_\d+$", k)]  # page order
    for f, rows in zip(metric_figs, metric_tabs):
        ts = [float(r["time_ns"]) for r in rows]
        want = runs(ts, ts) if "B)" not in f["caption"] else 1
        if len(f["lines"]) != want:
            say("%s: %d lines, the series has %d runs between gaps" %
                (f["caption"][:50], len(f["lines"]), want))
    for k, rows in tabs.items():
        if k.endswith("/gpu_busy_per_step") and len(rows) > 1:
            ts = [float(r["start_ns"]) for r in rows]
            ends = [float(r["start_ns"]) + float(r["duration_ns"]) for r in rows]
            f = [f for f in p.figs if f["caption"].startswith("GPU busy")]
            if f and len(f[0]["lines"]) != runs(ts, ends):
                say("GPU busy: %d lines, %d runs" % (len(f[0]["lines"]), runs(ts, ends)))
    # one time range; memory held to the end
    timeaxes = set()
    for f in p.figs:
        if not f["lines"] or f["caption"].startswith(TIMELINE):
            continue
        xs = tuple(t[0] for t in sorted(xticks(f), key=lambda t: t[2]))
        timeaxes.add(xs)
        if f["caption"].startswith("Device memory") and max(x for x, _ in f["lines"][-1]) < 939.5:
            say("%s: the line stops at x=%.1f" % (f["caption"], f["lines"][-1][-1][0]))
    if len(timeaxes) > 1:
        say("time plots with different time axes: %s" % sorted(timeaxes))
    # timeline tooltips
    for f in p.figs:
        if f["caption"].startswith(TIMELINE):
            for t in f["titles"]:
                if (t.startswith("_Z") or "\n_Z" in t) and \
                        not any(t.split("\n")[-1] == u for u in undemangled):
                    say("timeline tooltip with a mangled name: %r" % t[:80])
    return text, p


def blend(px, colour):
    """px is colour drawn over white with an opacity of at least 0.4 (antialiased)."""
    a = [(255 - p) / (255 - c) for p, c in zip(px, colour) if c < 200]
    return a and min(a) > 0.4 and max(a) - min(a) < 0.15 and \
        all(abs(p - c) < 40 for p, c in zip(px, colour) if c >= 200)


def screenshots(apx, src, tmp, say):
    chrome = rh.find_chromium()
    if not chrome:
        msg = "chromium is not installed: the screenshots of the plots were not checked"
        if os.environ.get("APX_REQUIRE_CHROMIUM"):
            say(msg)
        else:
            print("SKIP (part): " + msg)
        return 0
    n = 0
    for trace in ("tests/fixtures/real/sync_every_step.apx", "tests/fixtures/hwc/throughput.apx",
                  "tests/fixtures/suite/empty_cache_fixed.apx"):
        page = os.path.join(tmp, "s.html")
        subprocess.run([apx, "report", "--format", "html", "--force", "-o", page, trace],
                       capture_output=True)
        text = open(page, encoding="utf-8").read()
        style = re.search(r"<style>.*?</style>", text, re.S).group(0)
        figs = [f for f in re.findall(r"<figure>.*?</figure>", text, re.S)
                if "class=\"series\"" in f]
        for i, fig in enumerate(figs):
            one = os.path.join(tmp, "fig.html")
            with open(one, "w", encoding="utf-8") as o:
                o.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\">%s</head><body>"
                        "%s</body></html>" % (style, fig))
            shot = os.path.join(tmp, "fig.png")
            if os.path.exists(shot):
                os.unlink(shot)
            r = rh.chromium_run(chrome, ["--window-size=1000,320", "--screenshot=" + shot,
                                         "file://" + one], tmp)
            if r.returncode or not os.path.exists(shot):
                say("%s: chromium --screenshot failed" % trace)
                return n
            w, h, bpp, rows = rh.png_pixels(open(shot, "rb").read())
            colour = bytes.fromhex(re.search(r'class="series"[^>]*stroke="#(\w{6})"', fig).group(1))
            hits = sum(1 for row in rows for x in range(0, w)
                       if blend(row[x * bpp:x * bpp + 3], colour))
            if hits < 20:
                cap = re.search(r"<figcaption>(.*?)</figcaption>", fig).group(1)
                say("%s: the plot %r shows no line (%d pixels of its colour)" %
                    (trace, cap, hits))
            n += 1
    return n


def main():
    apx, src = sys.argv[1], sys.argv[2]
    os.chdir(src)
    traces = sorted(fixture_traces.in_folder("tests/fixtures/suite") +
                    fixture_traces.in_folder("tests/fixtures/real") +
                    fixture_traces.in_folder("tests/fixtures/hwc")) + ["tests/fixtures/sample.apx"]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            def say(msg, trace=trace):
                fails.append("%s: %s" % (trace, msg))
            check_page(apx, trace, tmp, say)
        hostile = "tests/fixtures/corrupt/hostile-strings.apx"
        text, _ = check_page(apx, hostile, tmp, lambda m: fails.append(hostile + ": " + m)) \
            or ("", None)
        if "<script" in text or "\x1b" in text or "evil_kernel" not in text:
            fails.append(hostile + ": markup or control bytes from the trace on the page")
        shots = screenshots(apx, src, tmp, lambda m: fails.append("screenshot: " + m))
    for f in fails[:60]:
        print("FAIL: " + f)
    if fails:
        print("report-html-plots: %d failures" % len(fails))
        return 1
    print("report-html-plots: %d pages checked (names, SI axes, series, gaps, time range, "
          "tooltips), %d plots seen in Chromium" % (len(traces) + 1, shots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
