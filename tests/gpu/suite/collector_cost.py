"""collector_cost.py BUILD CASE VARIANT [ROUNDS [CONFIG,...]] - what the collector costs one
suite program (programs.py CASE VARIANT) on the GPU machine, feature by feature: each round runs, in turn,
the program plain, under `apx analyze` as it is, and under `apx analyze` with APX_OFF=cpu,
=callbacks, =clock and =decode (docs/collector.md), one process each, so a slow period of the
machine falls on every configuration; prints each configuration's ms per step (programs.py's
SUITE line) per round, then a table of medians and their ratio to plain. Written for the
suite's loader case, whose traced planted run was 1.22-1.45x slower than its plain runs: this
tells the collector (one feature of it) from the machine's process-to-process spread.
CONFIG,...: only those configurations (names as printed: plain, apx, off=cpu, ...), to fit a
device call."""
import os
import statistics
import subprocess
import sys
import tempfile

build, case, variant = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
prog = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs.py")
apx = os.path.join(build, "apx")
CONFIGS = [("plain", None), ("apx", ""), ("off=cpu", "cpu"), ("off=callbacks", "callbacks"),
           ("off=clock", "clock"), ("off=decode", "decode")]


def run(off, trace):
    cmd = [sys.executable, prog, case, variant]
    env = dict(os.environ)
    if off is not None:
        cmd = [apx, "analyze", "-q", "--force", "-o", trace, "--"] + cmd
        env["APX_CALIBRATE"] = "0"  # runs before the program: not in its steps, and slow
        if off:
            env["APX_OFF"] = off
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in p.stdout.splitlines():
        if line.startswith("SUITE "):
            return float(line.split()[3])
    print(f"  {case} {variant} {off!r}: FAILED rc {p.returncode} {p.stderr[-300:]!r}", flush=True)
    return None


if len(sys.argv) > 5:
    only = sys.argv[5].split(",")
    CONFIGS = [c for c in CONFIGS if c[0] in only]
    if not CONFIGS or "plain" not in only:
        sys.exit("collector_cost.py: CONFIG,... must name plain and known configurations")
ms = {name: [] for name, _ in CONFIGS}
with tempfile.TemporaryDirectory() as tmp:
    for r in range(rounds):
        order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
        for name, off in order:
            v = run(off, os.path.join(tmp, "t.apx"))
            if v is not None:
                ms[name].append(v)
        print(f"round {r + 1}: " + "  ".join(f"{n} {ms[n][-1]:.2f}" for n, _ in CONFIGS
                                             if ms[n]), flush=True)
base = statistics.median(ms["plain"]) if ms["plain"] else float("nan")
print(f"{case} {variant}: ms per step, median of {rounds} processes (ratio to plain)")
for name, _ in CONFIGS:
    if ms[name]:
        m = statistics.median(ms[name])
        print(f"  {name:14s} {m:9.3f}  {m / base:6.3f}x   runs {' '.join(f'{x:.2f}' for x in ms[name])}")
