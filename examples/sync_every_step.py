"""sync_every_step.py - PROBLEM: a synchronization every step. loss.item() makes the CPU wait
for the GPU each step, so the GPU idles while the CPU prepares the next step.
Fixed variant: sync_fixed.py."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS = 300
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device="cuda")
total = 0.0
for _ in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.item()                        # host waits for the GPU every step
fact(steps=STEPS, item_syncs=STEPS)
