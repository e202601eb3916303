"""sync_fixed.py - FIX of sync_every_step.py: the loss is accumulated on the GPU and read once
at the end, so the CPU's work for the next step overlaps the GPU's work on this one."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS = 100
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 4096)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(4096, 4096, device="cuda")
text = [f"tok{i}" for i in range(8000)]


def tokenize(words):                            # the host's work per step (about 1 ms)
    return [int(w[3:]) % 50000 for w in words]


total = torch.zeros((), device="cuda")
for _ in range(STEPS):
    ids = tokenize(text)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.detach()                      # stays on the GPU
print(f"mean loss {total.item() / STEPS:.4f}")  # one synchronization
fact(steps=STEPS, item_syncs=1)
