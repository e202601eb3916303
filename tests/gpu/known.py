"""known.py - shared by metrics_check.py, replay_check.py and capture_check.py:
their `--from DIR` offline mode (the committed traces, logs and ncu.csv of an earlier GPU run
instead of running), the known differences of DIR/known-differences.txt, and reading a trace
(apx-dump) and a workload's PHASE lines; and the tolerance on DRAM bytes that replay_check.py
and dram_spread.py --check hold apx to against ncu (bytes_agree).

known-differences.txt: one check a line, `ID | measured | reason` ('#' starts a comment). A
failing check whose ID is listed prints KNOWN and does not fail the run; a listed check that
passes prints "NOW PASSES" (take it off the list) and does not fail either; a failing check not
listed fails. Without DIR (on the GPU) nothing is known: every failure fails."""
import json
import os
import re
import subprocess
import sys


def args(argv):
    """(offline, dir) from `OUT` or `--from DIR`"""
    if len(argv) == 2 and argv[0] == "--from":
        return True, os.path.abspath(argv[1])
    if len(argv) == 1 and not argv[0].startswith("-"):
        return False, os.path.abspath(argv[0])
    sys.exit("usage: %s BUILD OUT | BUILD --from DIR" % os.path.basename(sys.argv[0]))


class Setup:
    """what every check starts with: `BUILD OUT | BUILD --from DIR` read, the output folder
    made, the apx and apx-dump paths, and the checker (replay: the replay.* known ids)"""

    def __init__(self, argv, replay=False):
        if len(argv) < 2:
            sys.exit("usage: %s BUILD OUT | BUILD --from DIR" % os.path.basename(argv[0]))
        self.build = os.path.abspath(argv[1])
        self.offline, self.out = args(argv[2:])
        self.apx = os.path.join(self.build, "apx")
        self.dump = os.path.join(self.build, "apx-dump")
        os.makedirs(self.out, exist_ok=True)
        self.check = Checker(self.out if self.offline else None, replay)


class LoggedRun:
    """what an earlier `apx analyze` run left in its log: stdout and stderr together, its exit
    status from apx's own summary line ('killed by signal N' -> 128 + N)"""

    def __init__(self, path):
        self.stdout = self.stderr = open(path, encoding="utf-8", errors="replace").read()
        m = re.search(r"killed by signal (\d+)", self.stdout)
        e = re.search(r"exit status (\d+)", self.stdout)
        self.returncode = 128 + int(m.group(1)) if m else int(e.group(1)) if e else 1


def logged_run(path):
    return LoggedRun(path)


def records(dump, trace):
    """every record of a trace, as apx-dump's JSON objects"""
    p = subprocess.run([dump, trace], capture_output=True, text=True)
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def bytes_agree(apx, ncu, traffic, pct=5.0):
    """A DRAM byte count of apx's against ncu's: within pct %, or within 0.1 % of the kernel's
    DRAM traffic (ncu's reads and writes), for the few kB or hundred kB a reading kernel
    writes, where a relative bar means nothing."""
    return abs(apx - ncu) <= pct / 100 * abs(ncu) or abs(apx - ncu) <= 0.001 * traffic


def phases(text):
    """{name: (start ns, end ns)} from a workload's `PHASE name t0 t1` lines"""
    ph = {}
    for line in text.splitlines():
        if line.startswith("PHASE "):
            _, name, t0, t1 = line.split()
            ph[name] = (int(t0), int(t1))
    return ph


class Checker:
    def __init__(self, known_dir, replay):
        """replay: the ids of replay_check.py (replay.*), else those of metrics_check.py"""
        self.known, self.fails, self.listed_ok = {}, 0, []
        path = os.path.join(known_dir, "known-differences.txt") if known_dir else None
        if path and os.path.exists(path):
            for line in open(path, encoding="utf-8"):
                line = line.split("#", 1)[0].strip()
                if line:
                    parts = [p.strip() for p in line.split("|")]
                    if parts[0].startswith("replay.") == replay:
                        self.known[parts[0]] = parts[1:] if len(parts) > 1 else []
        self.seen = set()

    def __call__(self, ok, what, cid=None):
        if cid:
            self.seen.add(cid)
        if not ok and cid in self.known:
            print("KNOWN " + what + "  [" + " | ".join(self.known[cid]) + "]", flush=True)
            return ok
        if ok and cid in self.known:
            self.listed_ok.append(cid)
            print("PASS  " + what + "  (NOW PASSES: take '%s' off known-differences.txt)" % cid,
                  flush=True)
            return ok
        print(("PASS  " if ok else "FAIL  ") + what + ("" if ok or not cid else "  [id " + cid + "]"),
              flush=True)
        self.fails += not ok
        return ok

    def finish(self):
        unused = sorted(set(self.known) - self.seen)
        for cid in unused:   # a listed check that no longer exists: the list is stale
            print("FAIL  known-differences.txt lists '%s', which no check has" % cid)
        self.fails += len(unused)
        return 1 if self.fails else 0
