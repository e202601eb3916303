"""run.py BUILD [--programs P,..] [--modes M,..] [--rounds R] [--out DIR] - the collector's
overhead benchmark, run on the GPU machine:

    python3 bench/overhead/run.py build/gpu

One process per (program, mode, round) runs programs.py, pinned to the same CPUs (--cpus);
each round runs every program under every mode once, in an order rotated from round to round,
so all modes see the same machine state (interleaved). A process's number is the median time
per step of its timed blocks. On the H200 machine a whole process runs fast or slow (up to
1.8x between processes of the same program and mode, with no steal time), so the modes that
can pause (none, floor, light, metrics, api, torch) run programs.py --toggle N: N pairs of
paused and collected blocks in one process, and their cost is the ratio of adjacent blocks
(the "in one process" table; the no-profiler process's own pairs are the method's noise).
nsys runs whole processes only. Budget: a process takes 5-25 s there (torch import, model
build, warm-up, blocks; steal % and phase times are logged), about 6 minutes a round of all
modes: full.sh splits the benchmark into device calls of under 10 minutes. Per program and
mode: ratio = step time / the no-profiler step time of the same round; the table gives the
median of the rounds' ratios with a 95 % bootstrap interval, and the added host time per
launch (kernels + copies + memsets per step, counted in the light trace).

Modes (MODES below): none; floor (bench/overhead/floor.c: CUPTI with the same activity kinds and
no processing); light and api (`apx analyze`); torch (torch.profiler, CPU + CUDA); nsys (`nsys
profile -t cuda -s none`, found on PATH or in Nsight Compute's folder); metrics (light with
`--metrics`: PM sampling of the summary set at 1 kHz; metrics-nonvml and light-nonvml:
the same without the NVML sampler; metrics-100hz and metrics-10khz: at 100 Hz and 10 kHz;
metrics-one: one DRAM metric instead of the set); and the per-feature variants used to price
each part of the collector (light-*: one feature or kind off; floor-*: one CUPTI feature on);
cupti-idle and cupti-loaded: CUPTI injected with no activity kind ever enabled, with and
without a subscriber of the capture callbacks (what being attached costs, collecting nothing).
light-nopy: light without the Python stacks (`--python-sampling 0 --python-backtrace none`;
light has them by default), light-nosampling and light-nobacktrace: with one of
the two only; where a run has light and light-nopy the table says what the stacks cost on top
(on_top_table: the ratio of their in-process pair ratios, and the round's two processes block
for block), e.g. `--programs gpt,resnet --modes none,light,light-nopy --rounds 5`.
`graph` runs the tiny loop from a CUDA graph without a profiler: the launch-bound check
(--launch-bound R repetitions) compares apx's launch-bound estimate from a traced run with the
saving the graph measures in one process (adjacent eager and graph blocks), as fractions of a
step (see launch_bound_check).

Writes DIR/results.json (every timing) and prints the table last."""
import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--programs", default="resnet,gpt,hf,tiny")
ap.add_argument("--modes", default="none,floor,light,api,torch,nsys")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--budget", type=float, default=0, help="no new round after S seconds (0: none)")
ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp(prefix="apx-bench-"))
ap.add_argument("--api-programs", default="gpt",
                help="programs the api mode runs for (it is priced on the transformer only)")
ap.add_argument("--metrics-programs", default="gpt",
                help="programs the metrics mode runs for (its price is measured on the transformer)")
ap.add_argument("--full-rounds", type=int, default=0, metavar="F",
                help="after F rounds of every mode, the later rounds run --late-modes only "
                "(0: every round runs every mode)")
ap.add_argument("--late-modes", default="none,light,nsys",
                help="the modes of the rounds after --full-rounds: those whose numbers are "
                "ratios of whole processes (nsys, against none) and light")
ap.add_argument("--only", action="append", default=[], metavar="MODE=PROG,..",
                help="run MODE for these programs only (repeatable), e.g. floor-pinned=resnet,tiny")
ap.add_argument("--toggle", type=int, default=6, metavar="N",
                help="pairs of collected/uncollected blocks in each process of the modes that "
                "can pause (none, floor*, light*, api, metrics, torch); 0: whole-run processes "
                "only")
ap.add_argument("--table", default="", metavar="RESULTS_JSON[,..]",
                help="print the tables of earlier runs' results.json, merged (run nothing)")
ap.add_argument("--launch-bound", type=int, default=3, metavar="R",
                help="repetitions of the launch-bound check (mode graph, program tiny)")
ap.add_argument("--keep", default="", help="copy the light traces of these programs to --out")
ap.add_argument("--cpus", default=os.environ.get("BENCH_CPUS", "gpu-node"),
                help="taskset CPU list every process runs on ('' = no pinning; default: up to 8 "
                "CPUs of the GPU's NUMA node, CPU 0 left out): the same cores for every mode, "
                "away from CPU 0's interrupts and on the node the GPU is attached to")
args = ap.parse_args()


def cpu_list(text):
    """'0-3,8' -> [0, 1, 2, 3, 8]"""
    out = []
    for part in filter(None, text.strip().split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def gpu_node_cpus():
    """Up to 8 CPUs (not CPU 0) of the NUMA node of GPU 0, as a taskset list; '2-9' when the
    machine does not say (no NUMA information, or a VM that puts everything on node -1)."""
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader",
                              "-i", "0"], capture_output=True, text=True).stdout.strip().lower()
        node = int(open(f"/sys/bus/pci/devices/{bus[4:] if len(bus) > 12 else bus}/numa_node").read())
        cpus = [c for c in cpu_list(open(f"/sys/devices/system/node/node{node}/cpulist").read())
                if c != 0]
    except (OSError, ValueError, IndexError):
        return "2-9"
    if node < 0 or len(cpus) < 2:
        return "2-9"
    return ",".join(str(c) for c in cpus[:8])


if args.cpus == "gpu-node":
    args.cpus = gpu_node_cpus()


def cpu_prefix():
    """The taskset command line that pins a process to --cpus (empty: no pinning)."""
    return ["taskset", "-c", args.cpus] if args.cpus and shutil.which("taskset") else []

here = os.path.dirname(os.path.abspath(__file__))
build = os.path.abspath(args.build)
apx = os.path.join(build, "apx")
inject = os.path.join(build, "libapx-inject.so")
floor = os.path.join(build, "libapx-floor.so")
work = tempfile.mkdtemp(prefix="apx-bench-work-")
programs = args.programs.split(",")
modes = args.modes.split(",")
if "none" not in modes:
    modes.insert(0, "none")


def find_nsys():
    p = shutil.which("nsys")
    if p:
        return p
    found = sorted(glob.glob("/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys"))
    return found[-1] if found else None


NSYS = find_nsys()
FLOOR_LIGHT = "kernel,memcpy,p2p,memset,memory,device"
# mode -> (how: "plain" | "apx" | "inject" | "floor" | "nsys", extra environment, apx options)
MODES = {
    "none": ("plain", {}, []),
    "graph": ("plain", {}, []),
    "torch": ("plain", {"BENCH_TORCH_PROFILER": "1"}, []),
    "nsys": ("nsys", {}, []),
    "floor": ("floor", {}, []),
    "floor-light": ("floor", {"APX_FLOOR_KINDS": FLOOR_LIGHT}, []),
    "floor-sync": ("floor", {"APX_FLOOR_KINDS": FLOOR_LIGHT + ",sync"}, []),
    "floor-clock": ("floor", {"APX_FLOOR_KINDS": FLOOR_LIGHT, "APX_FLOOR_CLOCK": "1"}, []),
    "floor-attrs": ("floor", {"APX_FLOOR_KINDS": FLOOR_LIGHT, "APX_FLOOR_ATTRS": "1"}, []),
    "floor-pinned": ("floor", {"APX_FLOOR_PINNED": "1"}, []),
    "floor-shared": ("floor", {"APX_FLOOR_SHARED": "1"}, []),
    # what being attached costs with nothing collected (the whole-process "paused" column):
    # CUPTI injected with no kind ever enabled, as a subscriber of the two capture callbacks
    # when toggled (cupti-idle) or with no subscriber at all (cupti-loaded)
    "cupti-idle": ("floor", {"APX_FLOOR_KINDS": "none"}, []),
    "cupti-loaded": ("floor", {"APX_FLOOR_KINDS": "none", "APX_FLOOR_CAPTURE": "0"}, []),
    # light is apx's default: with the Python stack at every launch, copy,
    # memset and sync and every thread's stack sampled at 200 Hz
    "light": ("apx", {}, ["--level", "light"]),
    # light without the Python stacks (priced on top of it: ON_TOP below), and
    # with one of the two only
    "light-nopy": ("apx", {}, ["--level", "light", "--python-sampling", "0",
                               "--python-backtrace", "none"]),
    "light-nosampling": ("apx", {}, ["--level", "light", "--python-sampling", "0"]),
    "light-nobacktrace": ("apx", {}, ["--level", "light", "--python-backtrace", "none"]),
    "api": ("apx", {}, ["--level", "api"]),
    # + PM sampling, 1 kHz; stopped in paused blocks, so that the pairs price the sampler
    "metrics": ("apx", {"APX_PM_STOP_OUTSIDE": "1"}, ["--level", "light", "--metrics"]),
    # the same without the NVML sampler (src_nvml.c): what the power and clock readings cost
    "metrics-nonvml": ("apx", {"APX_PM_STOP_OUTSIDE": "1", "APX_OFF": "nvml"},
                       ["--level", "light", "--metrics"]),
    "light-nonvml": ("apx", {"APX_OFF": "nvml"}, ["--level", "light"]),
    # PM sampling at a tenth and ten times the default rate: does its price follow the rate?
    "metrics-100hz": ("apx", {"APX_PM_STOP_OUTSIDE": "1"},
                      ["--level", "light", "--metrics", "--metrics-frequency", "100"]),
    "metrics-10khz": ("apx", {"APX_PM_STOP_OUTSIDE": "1"},
                      ["--level", "light", "--metrics", "--metrics-frequency", "10000"]),
    # one metric instead of the summary set's eight: does the set's size matter?
    "metrics-one": ("apx", {"APX_PM_STOP_OUTSIDE": "1"},
                    ["--level", "light", "--metrics-list", "dram__bytes_read.sum.per_second"]),
    "light-direct": ("inject", {}, []),
    "light-oldsync": ("apx", {"APX_KINDS": "+sync,-hostsync"}, ["--level", "light"]),
    "light-nohostsync": ("apx", {"APX_KINDS": "-hostsync"}, ["--level", "light"]),
    "light-noclock": ("apx", {"APX_OFF": "clock"}, ["--level", "light"]),
    "light-noattrs": ("apx", {"APX_OFF": "launch-attrs"}, ["--level", "light"]),
    "light-nocallbacks": ("apx", {"APX_OFF": "callbacks"}, ["--level", "light"]),
    "light-nodecode": ("apx", {"APX_OFF": "decode"}, ["--level", "light"]),
    "light-nocpu": ("apx", {"APX_OFF": "cpu"}, ["--level", "light"]),
    "light-nouvm": ("apx", {"APX_KINDS": "-uvm"}, ["--level", "light"]),
    "light-nomemory": ("apx", {"APX_KINDS": "-memory"}, ["--level", "light"]),
    "light-kernel": ("apx", {"APX_KINDS": "-memcpy,-p2p,-memset,-memory,-uvm,-hostsync"},
                     ["--level", "light"]),
}
# mode -> the mode it is priced on top of, where a run has both (e.g. the Python stacks
# on top of light without them); on_top_table() prints the ratios
ON_TOP = {"light": "light-nopy", "light-nosampling": "light-nopy",
          "light-nobacktrace": "light-nopy"}
for m in modes:
    if m not in MODES:
        sys.exit(f"run.py: unknown mode '{m}' (known: {', '.join(MODES)})")

res = {}        # (program, mode) -> {round: ms per step}
steps_run = {}  # (program, mode) -> total steps of the process
traces = {}     # program -> a light trace


pairs = {}      # (program, mode) -> {round: [on/off ratio of each adjacent block pair]}
pair_ms = {}    # (program, mode) -> {round: (off median, on median) ms per step}
collected = {}  # (program, mode) -> steps collected by the process (toggled: the "on" steps)
kernels_seen = {}   # (program, mode) -> {round: kernel records in its trace}


only = {}       # --only MODE=PROG,..: the programs a mode runs for
for spec in args.only:
    m, _, ps = spec.partition("=")
    if not ps:
        sys.exit(f"run.py: --only takes MODE=PROG,.., not '{spec}'")
    only[m] = ps.split(",")


def toggled(mode):
    """Modes whose process alternates collected and uncollected blocks (programs.py --toggle)."""
    return args.toggle > 0 and MODES[mode][0] in ("plain", "apx", "inject", "floor") \
        and mode != "graph"


def block_pairs(blocks):
    """[on/off] of each adjacent pair of blocks of a --toggle process (order off,on,on,off,..)."""
    off, on = list(blocks["off"]), list(blocks["on"])
    return [b / a for a, b in zip(off, on) if a > 0]


def trace_kernels(trace):
    """Kernel records in a trace (apx info's record table), or None."""
    out = subprocess.run([apx, "info", trace], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == "kernel":
            return int(f[2])
    return None


def cpu_ticks():
    """(steal, total) jiffies of all CPUs (/proc/stat): a VM's CPU time taken by its host"""
    try:
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (f[7] if len(f) > 7 else 0), sum(f)


steal = {}      # (program, mode) -> {round: % of CPU time stolen by the host during the process}
phase_s = {}    # (program, mode) -> {round: programs.py's TIMES line (import, build, warm-up, timed)}
block_cpus = {}  # (program, mode) -> {round: the CPU the main thread was on after each block}


def one(prog, mode, rnd):
    how, extra, opts = MODES[mode]
    if mode == "graph" and prog != "tiny":
        return
    if mode == "api" and prog not in args.api_programs.split(","):
        return
    if mode.startswith("metrics") and prog not in args.metrics_programs.split(","):
        return
    if mode in only and prog not in only[mode]:
        return
    env = dict(os.environ)
    for k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "NVTX_INJECTION64_PATH", "APX_KINDS", "APX_OFF"):
        env.pop(k, None)
    env.update(extra)
    env["APX_CALIBRATE"] = "0"      # measured once by the launch-bound check, not per process
    cmd = [sys.executable, os.path.join(here, "programs.py"), prog]
    if mode == "graph":
        cmd.append("--graph")
    tog = toggled(mode)
    if tog:
        cmd += ["--toggle", str(args.toggle)]
    trace = os.path.join(work, f"{prog}-{mode}-{rnd}.apx")
    if how == "apx":
        cmd = [apx, "analyze", "-q", "--force", "-o", trace] + opts + \
            (["--capture-range=cudaProfilerApi"] if tog else []) + ["--"] + cmd
    elif how == "inject":
        env.update(CUDA_INJECTION64_PATH=inject, APX_OUTPUT=trace)
        if tog:
            env["APX_CAPTURE"] = "cudaProfilerApi"
    elif how == "floor":
        env["CUDA_INJECTION64_PATH"] = floor
        if tog:
            env.setdefault("APX_FLOOR_CAPTURE", "1")     # cupti-loaded keeps its "0"
    elif how == "nsys":
        if not NSYS:
            return
        cmd = [NSYS, "profile", "-t", "cuda", "-s", "none", "--cpuctxsw=none", "-f", "true",
               "-o", os.path.join(work, f"{prog}-nsys-{rnd}")] + cmd
    cmd = cpu_prefix() + cmd
    t0 = time.time()
    st0 = cpu_ticks()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    st1 = cpu_ticks()
    stolen = 100.0 * (st1[0] - st0[0]) / (st1[1] - st0[1]) if st1[1] > st0[1] else 0.0
    steal.setdefault((prog, mode), {})[rnd] = round(stolen, 2)
    got = None
    for line in p.stdout.splitlines():
        if line.startswith("BENCH "):
            f = line.split()
            got = float(f[2])
            res.setdefault((prog, mode), {})[rnd] = got
            steps_run[(prog, mode)] = int(f[3])
            collected[(prog, mode)] = int(f[4]) if len(f) > 4 else int(f[3])
        elif line.startswith("TIMES "):
            phase_s.setdefault((prog, mode), {})[rnd] = line[6:]
        elif line.startswith("BLOCKS "):
            blocks = json.loads(line.split(None, 2)[2])
            pairs.setdefault((prog, mode), {})[rnd] = block_pairs(blocks)
            pair_ms.setdefault((prog, mode), {})[rnd] = (statistics.median(blocks["off"]),
                                                         statistics.median(blocks["on"]))
            block_cpus.setdefault((prog, mode), {})[rnd] = blocks.get("cpu", [])
    if os.path.exists(trace):
        # a collector that recorded nothing would look free: count what it recorded
        kernels_seen.setdefault((prog, mode), {})[rnd] = trace_kernels(trace)
    if mode == "light" and os.path.exists(trace):
        traces.setdefault(prog, trace)
    elif os.path.exists(trace):
        os.unlink(trace)
    for f in glob.glob(os.path.join(work, f"{prog}-nsys-{rnd}*")):
        os.unlink(f)
    print(f"  r{rnd} {prog:7s} {mode:18s} {time.time() - t0:5.1f} s steal {stolen:4.1f} %  "
          + (f"{got:8.3f} ms/step rc {p.returncode} "
             + phase_s.get((prog, mode), {}).get(rnd, "") if got is not None
             else f"FAILED rc {p.returncode}: "
             + (p.stderr or p.stdout)[-400:].replace("\n", " | ")), flush=True)


def median_ci(xs, n=4000, seed=1):
    """Median and a 95 % percentile-bootstrap interval of the median."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return statistics.median(xs), meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def launches_per_step(prog):
    """Kernels + copies + memsets per collected step, from the light trace (apx info)."""
    t = traces.get(prog)
    if not t or (prog, "light") not in collected:
        return None
    out = subprocess.run([apx, "info", t], capture_output=True, text=True).stdout
    n = 0
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] in ("kernel", "memcpy", "memset"):
            n += int(f[2])
    return n / collected[(prog, "light")] if n else None


def launch_bound_once(env, t):
    """One repetition of the launch-bound check: a traced run of the tiny loop (the collector's
    cost per launch measured, as apx analyze does by default) and its estimate, then a process
    timing adjacent eager / graph blocks. {} with an "error" when a part failed."""
    p = subprocess.run(cpu_prefix() + [apx, "analyze", "-q", "--force", "-o", t, "--", sys.executable,
                        os.path.join(here, "programs.py"), "tiny"], env=env,
                       capture_output=True, text=True)
    steps = traced_ms = None
    for line in p.stdout.splitlines():
        if line.startswith("BENCH "):
            traced_ms, steps = float(line.split()[2]), int(line.split()[3])
    rep = subprocess.run([apx, "report", "--format", "json", t], capture_output=True, text=True)
    try:
        doc = json.loads(rep.stdout)
    except ValueError:
        return {"error": "apx report failed: " + rep.stderr[-300:]}
    est = sum(f.get("saving_ns", 0) for f in doc.get("findings", []) if f.get("rule") == "launch-bound")
    cost = None
    for line in subprocess.run([apx, "report", t], capture_output=True, text=True).stdout.splitlines():
        if "cost per launch" in line:
            cost = line.strip()
    q = subprocess.run(cpu_prefix() + [sys.executable, os.path.join(here, "programs.py"), "tiny",
                                       "--vs-graph", "6"], env=env, capture_output=True, text=True)
    vs = [json.loads(line.split(" ", 2)[2]) for line in q.stdout.splitlines()
          if line.startswith("VSGRAPH ")]
    if not steps or not traced_ms or not vs:
        return {"error": "tiny traced or --vs-graph run failed: " + (q.stderr or p.stderr)[-300:]}
    e, g = vs[0]["eager"], vs[0]["graph"]
    saved = statistics.median(x - y for x, y in zip(e, g))          # ms a step, paired
    frac = statistics.median((x - y) / x for x, y in zip(e, g))     # of the eager step
    est_ms = est / 1e6 / steps
    return {"estimate_ms_per_step": est_ms, "traced_ms_per_step": traced_ms,
            "measured_ms_per_step": saved, "eager_ms": statistics.median(e),
            "graph_ms": statistics.median(g), "steps": steps, "evidence": cost,
            "ratio_ms": est_ms / saved if saved > 0 else None,
            "ratio": (est_ms / traced_ms) / frac if frac > 0 else None}


def launch_bound_check():
    """apx's launch-bound estimate on the tiny loop vs the saving its CUDA graph measures,
    --launch-bound times (mode graph). A whole process runs fast or slow on the H200 machine
    (its host time, which is most of this loop's step, with it), so the saving is measured in
    one process (adjacent eager and graph blocks) and the check compares fractions of a step:
    ratio = (estimate / the traced run's step) / (saving / the eager step), each in its own
    process's state; ratio_ms compares the milliseconds, as a user reads them. The median
    ratio is the result."""
    if "tiny" not in programs or "graph" not in modes or args.launch_bound < 1:
        return None
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env["XDG_CACHE_HOME"] = work
    reps = []
    for i in range(args.launch_bound):
        t = os.path.join(work, "tiny-calibrated.apx")
        r = launch_bound_once(env, t)
        print(f"  launch-bound {i + 1}: " + json.dumps(r), flush=True)
        reps.append(r)
        if i == 0 and args.keep and "tiny" in args.keep.split(",") and os.path.exists(t):
            shutil.copy(t, os.path.join(args.out, "tiny_calibrated.apx"))
    ok = [r for r in reps if r.get("ratio")]
    if not ok:
        return {"error": "no repetition gave a ratio", "repetitions": reps}
    out = {k: statistics.median(r[k] for r in ok) for k in
           ("ratio", "ratio_ms", "estimate_ms_per_step", "measured_ms_per_step")
           if all(r.get(k) is not None for r in ok)}
    out["n"] = len(ok)
    out["repetitions"] = reps
    return out


def save(lb):
    """results.json: every timing so far (after each round, so a cut run keeps its rounds)."""
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"programs": programs, "modes": modes, "nsys": NSYS, "toggle": args.toggle,
                   "cpus": args.cpus,
                   "timings_ms": {f"{p}/{m}": v for (p, m), v in res.items()},
                   "steps": {f"{p}/{m}": v for (p, m), v in steps_run.items()},
                   "collected_steps": {f"{p}/{m}": v for (p, m), v in collected.items()},
                   "pair_ratios": {f"{p}/{m}": v for (p, m), v in pairs.items()},
                   "pair_ms": {f"{p}/{m}": v for (p, m), v in pair_ms.items()},
                   "kernels_in_trace": {f"{p}/{m}": v for (p, m), v in kernels_seen.items()},
                   "steal_pct": {f"{p}/{m}": v for (p, m), v in steal.items()},
                   "phase_s": {f"{p}/{m}": v for (p, m), v in phase_s.items()},
                   "block_cpus": {f"{p}/{m}": v for (p, m), v in block_cpus.items()},
                   "launches_per_step": {p: launches_per_step(p) for p in programs},
                   "elapsed_s": round(time.time() - t_start),
                   "launch_bound": lb}, f, indent=1)


def attached_table(prog):
    """What the pairs cannot price: each mode's paused blocks (profiler attached, nothing
    collected) and collected blocks against the paused blocks of the same round's no-profiler
    process (whole processes, so with the machine's process-to-process spread)."""
    base = pair_ms.get((prog, "none"), {})
    lines = []
    for m in modes[1:]:
        got = pair_ms.get((prog, m), {})
        rounds = [r for r in got if r in base and base[r][0] > 0]
        if not rounds:
            continue
        off = median_ci([got[r][0] / base[r][0] for r in rounds])
        on = median_ci([got[r][1] / base[r][0] for r in rounds])
        lines.append(f"        {m:18s} paused {off[0]:6.3f}x [{off[1]:5.3f}, {off[2]:5.3f}]  "
                     f"collected {on[0]:6.3f}x [{on[1]:5.3f}, {on[2]:5.3f}] n={len(rounds)}")
    if lines:
        print("        whole processes, paused and collected blocks / the no-profiler process's "
              "paused blocks (the profiler attached but not collecting is in both):")
        print("\n".join(lines))


def ratio_ci(xs, ys, n=4000, seed=1):
    """median(xs) / median(ys) and a 95 % percentile-bootstrap interval (xs and ys resampled
    apart: they come from different processes)."""
    rng = random.Random(seed)
    rs = sorted(statistics.median(rng.choices(xs, k=len(xs))) /
                statistics.median(rng.choices(ys, k=len(ys))) for _ in range(n))
    return statistics.median(xs) / statistics.median(ys), rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def on_top_table(prog):
    """What a mode adds on top of another (ON_TOP; e.g. light with the Python stacks over
    light without them), three ways: pairs = the ratio of the two modes' in-process
    collected/paused pair ratios (all rounds pooled): what is on only while collecting (stacks
    at launches); collected and paused = the two processes of a round compared block for
    block, median of the rounds: everything the mode adds, a sampler that also runs in paused
    blocks included, with the machine's process-to-process spread. Without --toggle: whole
    processes of a round."""
    lines = []
    for m, base in ON_TOP.items():
        if m not in modes or base not in modes:
            continue
        pa = [x for xs in pairs.get((prog, m), {}).values() for x in xs]
        pb = [x for xs in pairs.get((prog, base), {}).values() for x in xs]
        ma, mb = pair_ms.get((prog, m), {}), pair_ms.get((prog, base), {})
        rounds = [r for r in ma if r in mb and mb[r][0] > 0 and mb[r][1] > 0]
        parts = []
        if pa and pb:
            med, lo, hi = ratio_ci(pa, pb)
            parts.append(f"pairs {med:6.3f}x [{lo:5.3f}, {hi:5.3f}] n={len(pa)}/{len(pb)}")
        if rounds:
            on = median_ci([ma[r][1] / mb[r][1] for r in rounds])
            off = median_ci([ma[r][0] / mb[r][0] for r in rounds])
            parts.append(f"collected {on[0]:6.3f}x [{on[1]:5.3f}, {on[2]:5.3f}]  "
                         f"paused {off[0]:6.3f}x [{off[1]:5.3f}, {off[2]:5.3f}] n={len(rounds)}")
        else:
            va, vb = res.get((prog, m), {}), res.get((prog, base), {})
            whole = [va[r] / vb[r] for r in va if r in vb and vb[r] > 0]
            if whole:
                med, lo, hi = median_ci(whole)
                parts.append(f"whole processes {med:6.3f}x [{lo:5.3f}, {hi:5.3f}] n={len(whole)}")
        if parts:
            lines.append(f"        {m + ' / ' + base:30s} " + "  ".join(parts))
    if lines:
        print("        on top of another mode (pairs: ratio of the in-process pair ratios; "
              "collected, paused: the round's two processes' blocks):")
        print("\n".join(lines))


def print_table(lb, lps_of, elapsed):
    """The tables: whole processes against the round's no-profiler one, then the pairs."""
    print(f"\noverhead ({elapsed:.0f} s): step time under each mode / without a "
          "profiler, median of the rounds' ratios [95 % bootstrap interval]; us = added host time "
          "per launch")
    for prog in programs:
        base = res.get((prog, "none"), {})
        if not base:
            print(f"{prog}: no baseline")
            continue
        lps = lps_of(prog)
        b = statistics.median(base.values())
        print(f"{prog:7s} none {b:8.3f} ms/step" + (f", {lps:.0f} launches/step" if lps else ""))
        for m in modes[1:]:
            v = res.get((prog, m), {})
            ratios = [v[r] / base[r] for r in v if r in base]
            if not ratios:
                print(f"        {m:18s} n/a")
                continue
            med, lo, hi = median_ci(ratios)
            us = f"{(statistics.median(v.values()) - b) * 1e3 / lps:+7.2f} us" if lps else ""
            print(f"        {m:18s} {med:6.3f}x [{lo:5.3f}, {hi:5.3f}] n={len(ratios)} {us}")
        print("        in one process, collected / uncollected blocks (adjacent pairs of all "
              "rounds pooled):")
        for m in modes:
            pr = [x for xs in pairs.get((prog, m), {}).values() for x in xs]
            if not pr:
                continue
            med, lo, hi = median_ci(pr)
            ms = pair_ms.get((prog, m), {}).values()
            d = statistics.median(on - off for off, on in ms) if ms else 0
            us = f"{d * 1e3 / lps:+7.2f} us" if lps else ""
            ks = [k for k in kernels_seen.get((prog, m), {}).values() if k is not None]
            kn = f" kernels {min(ks)}-{max(ks)}" if ks else ""
            print(f"        {m:18s} {med:6.3f}x [{lo:5.3f}, {hi:5.3f}] n={len(pr)} {us}{kn}")
        attached_table(prog)
        on_top_table(prog)
    if lb:
        print("launch-bound check (tiny loop):",
              json.dumps({k: v for k, v in lb.items() if k != "repetitions"}))


def merge_results(paths):
    """The results.json files of several runs (e.g. one per device call) as one: round r of
    file i becomes round "i.r", so a ratio still pairs a process with its own round's
    no-profiler one; programs and modes in first-seen order; the last launch-bound check and
    the first launches per step found."""
    out = {"programs": [], "modes": [], "launches_per_step": {}, "launch_bound": None,
           "elapsed_s": 0}
    for i, path in enumerate(paths):
        try:
            d = json.load(open(path))
        except (OSError, ValueError) as e:
            sys.exit(f"run.py: --table: cannot read {ascii(path)}: {e}")
        for key in ("programs", "modes"):
            out[key] += [x for x in d.get(key, []) if x not in out[key]]
        for key in ("timings_ms", "pair_ratios", "pair_ms", "kernels_in_trace"):
            for pm, rounds in d.get(key, {}).items():
                out.setdefault(key, {}).setdefault(pm, {}).update(
                    {f"{i}.{r}": v for r, v in rounds.items()})
        for p, v in d.get("launches_per_step", {}).items():
            if v and not out["launches_per_step"].get(p):
                out["launches_per_step"][p] = v
        out["launch_bound"] = d.get("launch_bound") or out["launch_bound"]
        out["elapsed_s"] += d.get("elapsed_s", 0)
    return out


if args.table:  # --table FILE[,FILE..]: the tables of earlier (maybe cut) runs' results.json
    d = merge_results(args.table.split(","))
    programs, modes = d["programs"], d["modes"]
    if "none" in modes:
        modes.remove("none")
    modes.insert(0, "none")

    def back(key):
        return {tuple(k.split("/", 1)): v for k, v in d.get(key, {}).items()}
    res, pairs, pair_ms, kernels_seen = (back("timings_ms"), back("pair_ratios"),
                                         back("pair_ms"), back("kernels_in_trace"))
    print_table(d.get("launch_bound"), lambda p: d.get("launches_per_step", {}).get(p),
                d.get("elapsed_s", 0))
    sys.exit(0)

t_start = time.time()
print(f"overhead: programs {programs}, modes {modes}, {args.rounds} rounds, CPUs {args.cpus or 'any'}, nsys {NSYS}",
      flush=True)
for rnd in range(args.rounds):
    if args.budget and rnd and time.time() - t_start > args.budget:
        print(f"time budget spent after {rnd} rounds", flush=True)
        break
    ms = modes if not args.full_rounds or rnd < args.full_rounds else \
        [m for m in modes if m in args.late_modes.split(",")]
    k = rnd % len(ms)
    order = [(p, ms[(i + k) % len(ms)]) for p in programs for i in range(len(ms))]
    for prog, mode in order:
        one(prog, mode, rnd)
        save(None)      # after every process: a call cut short keeps what it measured

lb = launch_bound_check()
for prog in (args.keep.split(",") if args.keep else []):
    if prog in traces:
        shutil.copy(traces[prog], os.path.join(args.out, f"{prog}_light.apx"))
save(lb)

print_table(lb, launches_per_step, time.time() - t_start)
