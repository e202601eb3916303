"""bench-fixtures.py APX SRC - apx on the traces that bench/overhead captured on the H200
(tests/fixtures/bench: the light traces of the bf16 ResNet, GPT and HuggingFace GPT-2 loops and
the tiny-kernel loop with the collector's cost per launch calibrated), checked against that
run's own measurements without a profiler (bench/results/2026-12-01-overhead-h200.json):

- every trace reads cleanly, its steady state is found, and its step count equals the steps
  the program ran (bench's BENCH line);
- on the tiny-kernel loop the trace carries the calibrated cost per launch, and the
  launch-bound estimate per step is within 30 % of the saving that the CUDA-graph version of
  the same loop measured (none minus graph, medians of 5 processes each, bench/overhead).
Called by ctest (label integration)."""
import json
import os
import statistics
import subprocess
import sys

apx, src = sys.argv[1], sys.argv[2]
fix = os.path.join(src, "tests", "fixtures", "bench")
res = json.load(open(os.path.join(src, "bench", "results", "2026-12-01-overhead-h200.json")))
fails = 0


def check(ok, what):
    global fails
    print(("PASS  " if ok else "FAIL  ") + what)
    fails += not ok


def report(name):
    p = subprocess.run([apx, "report", "--format", "json", os.path.join(fix, name)],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"{name}: apx report exits 0 (got {p.returncode}) {p.stderr[-200:]}")
    return json.loads(p.stdout) if p.returncode == 0 else None


for prog in ("resnet", "gpt", "hf"):
    doc = report(f"{prog}_light.apx")
    if not doc:
        continue
    st = doc.get("steady_state") or {}
    ran = res["steps"][f"{prog}/light"]
    # the program ran `ran` steps (warm-up included); a step detector may miss the first one
    check(ran - 2 <= st.get("steps", 0) <= ran,
          f"{prog}: {st.get('steps')} steps found, the program ran {ran}")
    check(st.get("step_median_ns", 0) > 0, f"{prog}: step time {st.get('step_median_ns')} ns")

doc = report("tiny_calibrated.apx")
if doc:
    steps = res["launch_bound"]["steps"]
    lb = [f for f in doc["findings"] if f["rule"] == "launch-bound"]
    check(len(lb) == 1 and doc["findings"][0]["rule"] == "launch-bound",
          "tiny: launch-bound is the first finding")
    text = subprocess.run([apx, "report", "-s", "findings", os.path.join(fix, "tiny_calibrated.apx")],
                          capture_output=True, text=True).stdout
    check("collector's cost per launch" in text, "tiny: the calibrated cost per launch is used")
    if lb:
        est = lb[0]["saving_ns"] / 1e6 / steps
        t = res["timings_ms"]
        meas = statistics.median(t["tiny/none"].values()) - statistics.median(t["tiny/graph"].values())
        ratio = est / meas
        check(0.7 <= ratio <= 1.3, f"tiny: launch-bound estimate {est:.3f} ms/step, CUDA graph "
              f"measured {meas:.3f} ms/step: ratio {ratio:.2f} (within 30 %)")
sys.exit(1 if fails else 0)
