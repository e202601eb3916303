"""sync_every_step.py - PROBLEM: a synchronization every step. loss.item() makes the CPU wait
for the GPU each step, so the CPU's own work for the next step (here: tokenizing its text)
cannot overlap the GPU's work and the GPU idles meanwhile. Fixed variant: sync_fixed.py."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS = 100
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True       # tensor cores: not this example's problem
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 4096)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(4096, 4096, device="cuda")
text = [f"tok{i}" for i in range(8000)]


def tokenize(words):                            # the host's work per step (about 1 ms)
    return [int(w[3:]) % 50000 for w in words]


total = 0.0
for _ in range(STEPS):
    ids = tokenize(text)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.item()                        # host waits for the GPU every step
fact(steps=STEPS, item_syncs=STEPS)
