"""check.py BUILD [--out DIR] [--pairs N] [--quick] [--modes train,infer] [--no-refusals]
[--no-kernels] [--probes full,load,subscribe] [--concurrent] - `apx attach` on a real GPU
(label gpu; exit 77 without one).

Two programs (loop.py): a bf16 training loop that keeps the GPU busy (batch 32 x 512) and a
host-bound inference loop (16 x 256). Every loop process runs on the same four CPUs
(--concurrent: the control beside it on four others).
  - kernels: attach at a random time for 5 s (training: again for 2 s after the first detach);
    apx attach exits 0, and the trace's kernels, counted step by step over the steps inside
    the collection window, equal torch.profiler's kernels a step in a separate run of the same
    program (loop.py --profile-steps). The time apx attach says the borrowed thread was held,
    and the longest step around the attach, are reported.
  - speed after the detach: N pairs (default 3) of processes run one after the other, an
    unattached control and an attached one (3 s at a random time) in turn; in each process
    every step time is divided by the median of that process's steps before the attach (the
    control: before the same offset from its start). The ratio of the median normalised step
    after the detach (attached processes) to the same in the controls, pair by pair, with a
    bootstrap 95 % interval over the pairs (the steps pooled printed beside it): FAIL when the
    interval lies above 1.05. Also the ratio while collecting, and the threads the attached
    process has after the detach that it did not have before, with the CPU time they use.
    --concurrent runs each pair's two processes at the same time on two CPU sets (the
    attached one alternating), so that the machine's swings of host speed (per-second step
    medians of one unattached inference loop from 2.7 to 5.4 ms on the H100 machine) fall on
    both. --probes repeats the pairs with
    attaches that do less (APX_ATTACH_PROBE, lib/collector/attach.c): load (the library
    loaded, CUPTI never touched) and subscribe (CUPTI subscribed, finalized as a real detach
    does, nothing collected), to find the part of an attach that stays.
  - an attach to a process that used torch.profiler once is refused with the CUPTI reason,
    and the process runs on (steps after the refusal, exit 0);
  - an attach from another user (nobody) is refused with the permission reason.
Prints one table last. Logs and traces under --out (default $OUT or a temp folder)."""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "loop.py")
SHAPE = {"train": ["--batch", "32", "--seq", "512"], "infer": ["--batch", "16", "--seq", "256"]}
CPUS = "4,5,6,7"
CPUS2 = "8,9,10,11"     # the concurrent control's


class Rows(list):
    """The table's rows, each also printed when it is made: a check cut short by a time limit
    still shows what it measured."""
    def append(self, row):
        super().append(row)
        print("row: " + " | ".join(str(x) for x in row), flush=True)


def boot_ratio(a, b, n=2000):
    """median(b) / median(a) and its bootstrap 95 % interval."""
    rnd = random.Random(1)
    r = sorted(statistics.median(rnd.choices(b, k=len(b))) /
               statistics.median(rnd.choices(a, k=len(a))) for _ in range(n))
    return statistics.median(b) / statistics.median(a), r[int(0.025 * n)], r[int(0.975 * n)]


def boot_pairs(ratios, n=2000):
    """The median of the pairs' ratios and its bootstrap 95 % interval over the pairs (the
    process, not the step, is the unit: a process's steps drift together)."""
    rnd = random.Random(1)
    r = sorted(statistics.median(rnd.choices(ratios, k=len(ratios))) for _ in range(n))
    return statistics.median(ratios), r[int(0.025 * n)], r[int(0.975 * n)]


def spawn_loop(out, mode, seconds, *extra, tag="", cpus=CPUS):
    log = os.path.join(out, f"loop-{mode}{tag}{'-'.join(extra)}.json")
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)    # as a user's program runs: not apx's library path
    p = subprocess.Popen([sys.executable, LOOP, mode, "--seconds", str(seconds), "--log", log,
                          "--cpus", cpus, *SHAPE[mode], *extra], stdout=subprocess.PIPE,
                         text=True, env=env)
    return p, log


def ready(p, mode):
    line = p.stdout.readline()
    if line.strip() != "ready":
        raise SystemExit(f"FAIL: loop.py {mode} did not start: {line!r}")


def start_loop(out, mode, seconds, *extra, tag="", cpus=CPUS):
    p, log = spawn_loop(out, mode, seconds, *extra, tag=tag, cpus=cpus)
    ready(p, mode)
    return p, log


def attach(build, pid, seconds, trace, user=None, probe="full"):
    cmd = [os.path.join(build, "apx"), "attach", str(pid), "-d", str(seconds), "-o", trace,
           "--force"]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    env = dict(os.environ)
    if probe != "full":
        env["APX_ATTACH_PROBE"] = probe     # lib/collector/attach.c: a diagnosis run
    t0 = time.monotonic_ns()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r, t0, time.monotonic_ns()


def thread_cpu(pid):
    """{tid: (name, CPU ticks so far)} of a process's threads (what an attach may leave)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:                     # it ended
        return out
    for t in tids:
        try:
            name = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            f = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
            out[int(t)] = (name, int(f[11]) + int(f[12]))     # utime + stime
        except (OSError, IndexError, ValueError):
            pass
    return out


def held_ms(stderr):
    m = re.search(r"was held ([0-9.]+) ms", stderr)
    return float(m.group(1)) if m else float("nan")


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
    subprocess.run([sys.executable, LOOP, mode, "--profile-steps", "20", "--log", log,
                    *SHAPE[mode]], check=True, stdout=subprocess.DEVNULL)
    ref = json.load(open(log))
    names = [n for n in ref["profiler_kernels"] if not n.startswith(("Memcpy", "Memset"))]
    return len(names) / ref["profiler_steps"]


def ms(steps):
    return [(e - s) / 1e6 for s, e in steps]


def one(build, out, mode, rows, quick=False):
    """The kernels of the attached window against torch.profiler's; the pause at the attach."""
    per_step_ref = reference(out, mode)
    p, log = start_loop(out, mode, 18)
    time.sleep(random.uniform(4, 6))
    trace = os.path.join(out, f"attach-{mode}.apx")
    r, a0, a1 = attach(build, p.pid, 5, trace)
    open(os.path.join(out, f"attach-{mode}.err"), "w").write(r.stderr)
    again = None
    if mode == "train" and not quick:
        time.sleep(3)
        again, _, _ = attach(build, p.pid, 2, os.path.join(out, f"attach-{mode}-2.apx"))
        open(os.path.join(out, f"attach-{mode}-2.err"), "w").write(again.stderr)
    p.wait()
    steps = json.load(open(log))["steps"]
    ks = kernels(build, trace) if r.returncode == 0 else []
    inside = [s for s in steps if ks and s[0] >= ks[0][0] and s[1] <= ks[-1][1]]
    counts = [sum(1 for k in ks if s[0] <= k[0] < s[1]) for s in inside]
    before = ms(s for s in steps if s[1] < a0)
    # the injection happens in the first second of apx attach: the longest step then
    around = ms(s for s in steps if s[1] > a0 and s[0] < a0 + 1e9)
    ok = (r.returncode == 0 and p.returncode == 0 and counts and
          all(c == round(per_step_ref) for c in counts) and
          (again is None or again.returncode == 0))
    rows.append((f"{mode}: kernels", r.returncode, again.returncode if again else "-",
                 len(inside), f"{min(counts) if counts else 0}-{max(counts) if counts else 0}",
                 f"{per_step_ref:.1f}",
                 f"held {held_ms(r.stderr):.1f} ms; longest step then "
                 f"{max(around) if around else 0:.1f} ms (median "
                 f"{statistics.median(before) if before else 0:.1f})",
                 p.returncode, "ok" if ok else "FAIL"))
    return ok


def leftovers(pid, before):
    """The threads the process has 0.5 s after the detach that it did not have before it, and
    the CPU time they use in the 4 s after that: '2 new (python3, ...), 0 ms CPU in 4 s'."""
    time.sleep(0.5)
    new0 = {t: v for t, v in thread_cpu(pid).items() if t not in before}
    time.sleep(4)
    now = thread_cpu(pid)
    used = sum(now[t][1] - v[1] for t, v in new0.items() if t in now)
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    return (f"{len(new0)} new thread(s) ({', '.join(v[0] for v in new0.values()) or '-'}), "
            f"{used * tick_ms:.0f} ms CPU in 4 s")


def split(log, a0, a1):
    """A loop's steps around an attach window [a0, a1]: the median before (ms) and the steps
    after (from 1 s past a1) and during (from 1 s past a0) as multiples of it."""
    steps = json.load(open(log))["steps"]
    base = statistics.median(ms(s for s in steps if s[1] < a0) or [1])
    after = [x / base for x in ms(s for s in steps if s[0] > a1 + 1e9)]
    during = [x / base for x in ms(s for s in steps if s[0] > a0 + 1e9 and s[1] < a1)]
    return base, after, during


def detach(build, out, mode, pairs, rows, probe="full", concurrent=False):
    """Step time after the detach against unattached controls. probe: full (a real attach), or
    APX_ATTACH_PROBE's load / subscribe (what stays after less). The control runs before the
    attached process, or with --concurrent at the same time on other CPUs (CPUS2), the
    attached one alternating between the two CPU sets: the machine's swings of host speed,
    which last seconds, then fall on both."""
    after_a, after_c, during_a, during_c, exits = [], [], [], [], []
    pair_after, pair_during = [], []
    for i in range(pairs):
        med = {}
        for attached in ((None,) if concurrent else (False, True)):
            tag = f"-{probe}-pair{i}-"
            if concurrent:     # both started, then both waited for: their loops overlap
                procs = [spawn_loop(out, mode, 16, tag=tag + f"{k}", cpus=c)
                         for k, c in enumerate((CPUS, CPUS2))]
                for p, _ in procs:
                    ready(p, mode)
            else:
                procs = [start_loop(out, mode, 13, tag=tag + ("att" if attached else "ctl"))]
            target = i % 2 if concurrent else (0 if attached else None)
            time.sleep(random.uniform(3, 4))
            a0 = time.monotonic_ns()
            a1 = a0 + 3_000_000_000
            if target is not None:
                pid = procs[target][0].pid
                before = thread_cpu(pid)
                r, a0, a1 = attach(build, pid, 3,
                                   os.path.join(out, f"pair-{mode}-{probe}-{i}.apx"), probe=probe)
                exits.append(r.returncode)
                last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
                print(f"{mode} {probe} pair {i}: apx attach rc {r.returncode}; {last}; after "
                      f"the detach: {leftovers(pid, before)}", flush=True)
            for k, (p, log) in enumerate(procs):
                p.wait()
                exits.append(p.returncode)
                is_att = k == target
                base, after, during = split(log, a0, a1)
                (after_a if is_att else after_c).extend(after)
                (during_a if is_att else during_c).extend(during)
                med[is_att] = (statistics.median(after) if after else 0,
                               statistics.median(during) if during else 0)
                print(f"{mode} {probe} pair {i} {'attached' if is_att else 'control'}: before "
                      f"{base:.3f} ms; after x{med[is_att][0]:.3f}, during x{med[is_att][1]:.3f}",
                      flush=True)
        if med[False][0] > 0 and med[True][0] > 0:
            pair_after.append(med[True][0] / med[False][0])
        if med[False][1] > 0 and med[True][1] > 0:
            pair_during.append(med[True][1] / med[False][1])
    # the verdict's interval is over the pairs; the steps pooled are printed beside it
    ratio = boot_pairs(pair_after) if pair_after else (0, 0, 0)
    dur = boot_pairs(pair_during) if pair_during else (0, 0, 0)
    pooled = boot_ratio(after_c, after_a) if after_a and after_c else (0, 0, 0)
    ok = all(e == 0 for e in exits) and ratio[0] > 0 and ratio[1] <= 1.05
    rows.append((f"{mode}: after detach" + ("" if probe == "full" else f" ({probe})") +
                 (" conc." if concurrent else ""), max(exits), "-", len(after_a), "-", "-",
                 f"after {ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]; during "
                 f"{dur[0]:.3f} [{dur[1]:.3f}, {dur[2]:.3f}] x control ({len(pair_after)} "
                 f"pairs; steps pooled {pooled[0]:.3f} [{pooled[1]:.3f}, {pooled[2]:.3f}])",
                 max(exits), "ok" if ok else "FAIL"))
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
    rows.append(("refused: torch.profiler", r.returncode, "-", "-", "-", "-",
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
    rows.append(("refused: another user", r.returncode, "-", "-", "-", "-", "-",
                 p.returncode, "ok" if good and p.returncode == 0 else "FAIL"))
    shutil.rmtree(tmp, ignore_errors=True)
    return ok and good and p.returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    ap.add_argument("--pairs", type=int, default=3, help="attached/control pairs a program")
    ap.add_argument("--quick", action="store_true",
                    help="the training loop only: one attach, one pair")
    ap.add_argument("--modes", default="train,infer", help="the programs: train, infer or both")
    ap.add_argument("--no-refusals", action="store_true", help="leave the refusal cases out")
    ap.add_argument("--no-kernels", action="store_true",
                    help="leave the kernel comparison out (only the speed after the detach)")
    ap.add_argument("--concurrent", action="store_true",
                    help="each pair's control runs at the same time as the attached process, "
                    "on other CPUs")
    ap.add_argument("--probes", default="full",
                    help="attaches of the after-detach pairs: full, and the diagnosis probes "
                    "load (the library loaded, no CUPTI) and subscribe (CUPTI subscribed and "
                    "finalized, nothing collected)")
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
    rows, ok = Rows(), True
    for mode in ("train",) if a.quick else [m for m in ("train", "infer")
                                            if m in a.modes.split(",")]:
        if not a.no_kernels:
            ok &= one(build, a.out, mode, rows, a.quick)
        for probe in a.probes.split(","):
            ok &= detach(build, a.out, mode, 1 if a.quick else a.pairs, rows, probe,
                         a.concurrent)
    if not a.quick and not a.no_refusals:
        ok &= refused(build, a.out, rows)
    print(f"{'case':32} {'rc':>3} {'rc2':>3} {'steps':>5} {'kernels/step':>12} {'ref':>6}  "
          f"{'measured':70} {'exit':>4} result")
    for row in rows:
        print(f"{row[0]:32} {row[1]:>3} {row[2]:>3} {row[3]:>5} {row[4]:>12} {row[5]:>6}  "
              f"{row[6]:70} {row[7]:>4} {row[8]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
