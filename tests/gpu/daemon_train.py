"""daemon_train.py MODE [STEPS] [--rows N] [--in N] [--batches N] - the training program of
the nvperfd check on the GPU (tests/gpu/daemon_verify.sh): an MLP whose input batches are
copied host->device each step from pageable (MODE=pageable) or pinned (MODE=pinned) host
memory; --window also sets a
persisting-L2 limit and an access-policy window on the compute stream (cudaDeviceSetLimit,
cudaStreamSetAttribute through ctypes); --blocks FILE writes each 20-step block's end time
(Unix seconds) and mean step time, as it goes, for the overhead measurement; --rows, --in and
--batches set the batch (default 4096 rows of 4096 floats: 64 MiB copied a step) and how many
distinct batches it cycles through (default 4). Prints its setup first, the steady-state
median step time and one APX_FACT line with the bytes it copied host->device."""
import ctypes
import json
import statistics
import sys
import time

import torch

mode = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 300
window = "--window" in sys.argv
blocks = open(sys.argv[sys.argv.index("--blocks") + 1], "w") if "--blocks" in sys.argv else None
torch.backends.cuda.matmul.allow_tf32 = True
torch.manual_seed(0)


def opt_int(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


# 4 batches of 4096 rows x 4096 floats (64 MiB, + 32 KiB labels) by default
B, D, NB, DIN = opt_int("--rows", 4096), 4096, opt_int("--batches", 4), opt_int("--in", 4096)
print(f"setup mode={mode} rows={B} in={DIN} batches={NB} "
      f"h2d_mib_per_step={(B * DIN * 4 + B * 8) / 2**20:.2f}", flush=True)
pin = mode == "pinned"
xs = [torch.randn(B, DIN) for _ in range(NB)]
ys = [torch.randint(0, 10, (B,)) for _ in range(NB)]
if pin:
    xs = [x.pin_memory() for x in xs]
    ys = [y.pin_memory() for y in ys]
model = torch.nn.Sequential(torch.nn.Linear(DIN, D), torch.nn.ReLU(), torch.nn.Linear(D, D),
                            torch.nn.ReLU(), torch.nn.Linear(D, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
stream = torch.cuda.current_stream()
if window:
    class APW(ctypes.Structure):
        _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                    ("hitRatio", ctypes.c_float), ("hitProp", ctypes.c_int),
                    ("missProp", ctypes.c_int)]

    class Attr(ctypes.Union):
        _fields_ = [("accessPolicyWindow", APW), ("pad", ctypes.c_char * 64)]
    rt = ctypes.CDLL("libcudart.so.13")
    w0 = model[0].weight
    assert rt.cudaDeviceSetLimit(ctypes.c_int(6), ctypes.c_size_t(16 << 20)) == 0
    v = Attr()
    v.accessPolicyWindow = APW(w0.data_ptr(), 8 << 20, 0.5, 2, 1)
    s = torch.cuda.Stream()
    stream = s
    assert rt.cudaStreamSetAttribute(ctypes.c_void_p(s.cuda_stream), ctypes.c_int(1),
                                     ctypes.byref(v)) == 0
torch.cuda.synchronize()
h2d = 0
times = []
with torch.cuda.stream(stream):
    t_block = time.perf_counter()
    for i in range(steps):
        x = xs[i % NB].to("cuda", non_blocking=pin)
        y = ys[i % NB].to("cuda", non_blocking=pin)
        h2d += x.numel() * 4 + y.numel() * 8
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % 20 == 19:                # a log line every 20 steps: the mean step of the block
            loss.item()
            now = time.perf_counter()
            times.append((now - t_block) / 20)
            if blocks:
                print(f"{time.time():.6f} {(now - t_block) / 20 * 1e3:.4f}", file=blocks,
                      flush=True)
            t_block = now
torch.cuda.synchronize()
med = statistics.median(times[1:] if len(times) > 1 else times)   # block 0: warm-up
print(f"step_ms {med * 1e3:.4f}")
print("APX_FACT " + json.dumps({"mode": mode, "steps": steps, "h2d_bytes": h2d,
                                "window": window}), flush=True)
