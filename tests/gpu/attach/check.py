"""check.py BUILD [--out DIR] - `apx attach` on a real GPU (label gpu; exit 77 without one).

For a bf16 training loop and an inference loop (loop.py), each run for 30 s: attach at a
random time for 5 s, then (training) attach again for 2 s after the first detach. Checks:
  - apx attach exits 0, and the trace's kernels, counted step by step over the steps that lie
    inside the collection window, equal torch.profiler's kernels a step in a separate run of
    the same program (loop.py --profile-steps);
  - the program's step time after the detach equals the step time before the attach: the
    ratio of medians with a bootstrap 95 % interval (reported; a FAIL when the interval lies
    above 1.05), and the program ends with exit 0;
  - an attach to a process that used torch.profiler once is refused with the CUPTI reason,
    and the process runs on (steps after the refusal, exit 0);
  - an attach from another user (nobody) is refused with the permission reason.
Prints one table last. Logs and traces under --out (default $OUT or a temp folder)."""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "loop.py")


def boot_ratio(a, b, n=2000):
    """median(b) / median(a) and its bootstrap 95 % interval."""
    rnd = random.Random(1)
    r = sorted(statistics.median(rnd.choices(b, k=len(b))) /
               statistics.median(rnd.choices(a, k=len(a))) for _ in range(n))
    return statistics.median(b) / statistics.median(a), r[int(0.025 * n)], r[int(0.975 * n)]


def start_loop(out, mode, seconds, *extra, tag=""):
    log = os.path.join(out, f"loop-{mode}{tag}{'-'.join(extra)}.json")
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)    # as a user's program runs: not apx's library path
    p = subprocess.Popen([sys.executable, LOOP, mode, "--seconds", str(seconds), "--log", log,
                          *extra], stdout=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    if line.strip() != "ready":
        raise SystemExit(f"FAIL: loop.py {mode} did not start: {line!r}")
    return p, log


def attach(build, pid, seconds, trace, user=None):
    cmd = [os.path.join(build, "apx"), "attach", str(pid), "-d", str(seconds), "-o", trace,
           "--force"]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    t0 = time.monotonic_ns()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, t0, time.monotonic_ns()


def kernels(build, trace):
    out = subprocess.run([os.path.join(build, "apx-dump"), trace], capture_output=True,
                         text=True, check=True).stdout
    ks = []
    for line in out.splitlines():
        if line.startswith('{"type":"kernel"'):
            k = json.loads(line)
            ks.append((k["start_ns"], k["end_ns"]))
    return sorted(ks)


def reference(out, mode):
    log = os.path.join(out, f"ref-{mode}.json")
    subprocess.run([sys.executable, LOOP, mode, "--profile-steps", "20", "--log", log],
                   check=True, stdout=subprocess.DEVNULL)
    ref = json.load(open(log))
    names = [n for n in ref["profiler_kernels"] if not n.startswith(("Memcpy", "Memset"))]
    return len(names) / ref["profiler_steps"]


def control(out, mode, t_attach, t_last, rows):
    """The same program never attached, its steps split at the same offsets from its start:
    how much the step time drifts on its own (clocks, warm-up) between 'before' and 'after'."""
    p, log = start_loop(out, mode, 30, tag="-control")
    t0 = time.monotonic_ns()
    p.wait()
    steps = json.load(open(log))["steps"]
    before = [(e - s) / 1e6 for s, e in steps if e < t0 + t_attach]
    after = [(e - s) / 1e6 for s, e in steps if s > t0 + t_last + 1e9]
    ratio = boot_ratio(before, after) if before and after else (0, 0, 0)
    rows.append((mode + " control", "-", "-", "-", "-", "-",
                 f"{statistics.median(before):.3f}" if before else "-",
                 f"{statistics.median(after):.3f}" if after else "-",
                 f"{ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]", p.returncode, "ok"))
    return ratio


def one(build, out, mode, rows, quick=False):
    per_step_ref = reference(out, mode)
    p, log = start_loop(out, mode, 30)
    t_start = time.monotonic_ns()
    time.sleep(random.uniform(4, 8))
    trace = os.path.join(out, f"attach-{mode}.apx")
    r, a0, a1 = attach(build, p.pid, 5, trace)
    open(os.path.join(out, f"attach-{mode}.err"), "w").write(r.stderr)
    again, last = None, a1
    if mode == "train" and not quick:
        time.sleep(3)
        again, _, last = attach(build, p.pid, 2, os.path.join(out, f"attach-{mode}-2.apx"))
        open(os.path.join(out, f"attach-{mode}-2.err"), "w").write(again.stderr)
    p.wait()
    steps = json.load(open(log))["steps"]
    ks = kernels(build, trace) if r.returncode == 0 else []
    inside = [s for s in steps if ks and s[0] >= ks[0][0] and s[1] <= ks[-1][1]]
    counts = [sum(1 for k in ks if s[0] <= k[0] < s[1]) for s in inside]
    before = [(e - s) / 1e6 for s, e in steps if e < a0]
    after = [(e - s) / 1e6 for s, e in steps if s > last + 1e9]   # after the last detach
    ratio = boot_ratio(before, after) if before and after else (0, 0, 0)
    ctl = control(out, mode, a0 - t_start, last - t_start, rows)
    # slower after the detach than the unattached control drifts, by more than 5 %
    ok = (r.returncode == 0 and p.returncode == 0 and counts and
          all(c == round(per_step_ref) for c in counts) and ratio[1] <= ctl[2] * 1.05 and
          (again is None or again.returncode == 0))
    rows.append((mode, r.returncode, again.returncode if again else "-", len(inside),
                 f"{min(counts) if counts else 0}-{max(counts) if counts else 0}",
                 f"{per_step_ref:.1f}", f"{statistics.median(before):.3f}" if before else "-",
                 f"{statistics.median(after):.3f}" if after else "-",
                 f"{ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]", p.returncode,
                 "ok" if ok else "FAIL"))
    return ok


def refused(build, out, rows):
    ok = True
    p, log = start_loop(out, "train", 15, "--profiler-first")
    time.sleep(3)
    r, _, a1 = attach(build, p.pid, 2, os.path.join(out, "refused.apx"))
    open(os.path.join(out, "refused.err"), "w").write(r.stderr)
    p.wait()
    steps = json.load(open(log))["steps"]
    later = sum(1 for s, _ in steps if s > a1)
    good = r.returncode == 1 and "CUPTI is already in use" in r.stderr and p.returncode == 0
    rows.append(("refused: torch.profiler", r.returncode, "-", "-", "-", "-", "-", "-",
                 f"{later} steps after", p.returncode, "ok" if good and later else "FAIL"))
    ok &= good and later > 0
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    for f in ("apx", "libapx-inject.so"):
        shutil.copy(os.path.join(build, f), tmp)
    p, log = start_loop(out, "infer", 8)
    r, _, _ = attach(tmp, p.pid, 1, "/tmp/nobody.apx", user=65534)
    open(os.path.join(out, "nobody.err"), "w").write(r.stderr)
    p.wait()
    good = r.returncode == 1 and ("permission" in r.stderr.lower() or
                                  "not allowed" in r.stderr)
    rows.append(("refused: another user", r.returncode, "-", "-", "-", "-", "-", "-", "-",
                 p.returncode, "ok" if good and p.returncode == 0 else "FAIL"))
    shutil.rmtree(tmp, ignore_errors=True)
    return ok and good and p.returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    ap.add_argument("--quick", action="store_true", help="the training loop only, one attach")
    a = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        print("skipped: no CUDA GPU with PyTorch here (tests/gpu/attach needs the GPU machine)")
        return 77
    build = os.path.abspath(a.build)
    os.makedirs(a.out, exist_ok=True)
    rows, ok = [], True
    for mode in ("train",) if a.quick else ("train", "infer"):
        ok &= one(build, a.out, mode, rows, a.quick)
    if not a.quick:
        ok &= refused(build, a.out, rows)
    print(f"{'case':24} {'rc':>3} {'rc2':>3} {'steps':>5} {'kernels/step':>12} {'ref':>6} "
          f"{'before ms':>9} {'after ms':>9} {'after/before [95 %]':>26} {'exit':>4} result")
    for row in rows:
        print(f"{row[0]:24} {row[1]:>3} {row[2]:>3} {row[3]:>5} {row[4]:>12} {row[5]:>6} "
              f"{row[6]:>9} {row[7]:>9} {row[8]:>26} {row[9]:>4} {row[10]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
