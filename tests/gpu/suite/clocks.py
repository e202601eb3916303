"""clocks.py CASE [ROUNDS [STEPS]] - the GPU's clocks and power while a suite program runs
(programs.py CASE planted and fixed, ROUNDS rounds of one process each, interleaved, STEPS
timed steps): nvidia-smi samples the SM clock, the power drawn, the temperature and the clock
event reasons every 50 ms; the samples taken while the program's process runs with the GPU
busy (utilization >= 50 %) are kept. Prints each run's ms per step (programs.py's SUITE line)
and medians, then a table per variant. No profiler: this tells whether a fixed variant's
kernels run slower because the GPU, busy all the time, runs at lower clocks (copy_overlap:
its GEMMs take 1.60 ms in the fixed trace, overlapped by the copy or not, against 1.43 ms in
the planted one). Reads the clocks only; changes no setting."""
import os
import statistics
import subprocess
import sys
import threading
import time

case = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
steps = sys.argv[3] if len(sys.argv) > 3 else "400"
prog = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs.py")
FIELDS = ["utilization.gpu", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu",
          "clocks_event_reasons.sw_power_cap", "clocks_event_reasons.hw_slowdown",
          "clocks_event_reasons.sw_thermal_slowdown"]


def usable(fields):
    """the fields this nvidia-smi knows (an older one names the reasons clocks_throttle_...)"""
    ok = []
    for f in fields:
        p = subprocess.run(["nvidia-smi", "--query-gpu=" + f, "--format=csv,noheader"],
                           capture_output=True, text=True)
        if p.returncode == 0 and "not a valid" not in p.stdout + p.stderr:
            ok.append(f)
        elif f.startswith("clocks_event_reasons."):
            alt = f.replace("clocks_event_reasons.", "clocks_throttle_reasons.")
            if subprocess.run(["nvidia-smi", "--query-gpu=" + alt, "--format=csv,noheader"],
                              capture_output=True, text=True).returncode == 0:
                ok.append(alt)
    return ok


fields = usable(FIELDS)
samples = []                     # (time, {field: value})


def sampler(stop):
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=" + ",".join(fields),
                          "--format=csv,noheader,nounits", "-lms", "50"],
                         stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        vals = [v.strip() for v in line.split(",")]
        if len(vals) == len(fields):
            samples.append((time.monotonic(), dict(zip(fields, vals))))
        if stop.is_set():
            break
    p.kill()


stop = threading.Event()
t = threading.Thread(target=sampler, args=(stop,), daemon=True)
t.start()
time.sleep(1)
runs = {"planted": [], "fixed": []}
for r in range(rounds):
    for v in ("planted", "fixed") if r % 2 == 0 else ("fixed", "planted"):
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, prog, case, v, "--steps", steps],
                           capture_output=True, text=True)
        t1 = time.monotonic()
        ms = next((float(l.split()[3]) for l in p.stdout.splitlines() if l.startswith("SUITE ")),
                  None)
        runs[v].append((t0, t1, ms))
        print(f"round {r} {v:8s} {ms} ms/step rc {p.returncode}", flush=True)
        time.sleep(2)
stop.set()


def num(s):
    try:
        return float(s)
    except ValueError:
        return 1.0 if s.strip().lower() == "active" else 0.0 if "not" in s.lower() else None


print(f"\n{case}: medians of the samples with the GPU busy (utilization >= 50 %), per variant; "
      "clock event reasons: the share of those samples with it active")
print(f"  {'variant':8s} {'ms/step':>8s} {'samples':>7s} " + " ".join(f"{f:>14.14s}" for f in fields[1:]))
for v, rs in runs.items():
    got = [d for (ts, d) in samples for (t0, t1, _) in rs
           if t0 <= ts <= t1 and (num(d[fields[0]]) or 0) >= 50]
    med = []
    for f in fields[1:]:
        xs = [x for x in (num(d[f]) for d in got) if x is not None]
        agg = statistics.mean if "reasons" in f else statistics.median   # reasons: share active
        med.append(f"{agg(xs):14.4g}" if xs else f"{'-':>14s}")
    ms = statistics.median(m for (_, _, m) in rs if m is not None) if any(m for *_, m in rs) else 0
    print(f"  {v:8s} {ms:8.3f} {len(got):7d} " + " ".join(med))
