"""copies_overlapped.py - FIX of copies_serial.py: batch i+1 is copied on a side stream while
batch i is computed; events order the two streams."""
from _common import fact, need_cuda

torch = need_cuda()
torch.backends.cuda.matmul.allow_tf32 = True       # tensor cores: not this example's problem
STEPS, MIB = 30, 32
host = [torch.randn(MIB * 2**20 // 4).pin_memory() for _ in range(2)]
w = torch.randn(4096, 4096, device="cuda")
copy_stream = torch.cuda.Stream()
dev = [torch.empty(MIB * 2**20 // 4, device="cuda") for _ in range(2)]
ready = [torch.cuda.Event() for _ in range(2)]
done = [torch.cuda.Event() for _ in range(2)]


def prefetch(i):
    b = i % 2
    with torch.cuda.stream(copy_stream):
        copy_stream.wait_event(done[b])
        dev[b].copy_(host[b], non_blocking=True)
        ready[b].record(copy_stream)


prefetch(0)
for i in range(STEPS):
    if i + 1 < STEPS:
        prefetch(i + 1)
    b = i % 2
    torch.cuda.current_stream().wait_event(ready[b])
    y = dev[b][: 4096 * 2048].view(2048, 4096) @ w
    y = (y @ w.T).relu_()
    done[b].record()
torch.cuda.synchronize()
fact(steps=STEPS, h2d_pinned_bytes=STEPS * host[0].numel() * 4)
