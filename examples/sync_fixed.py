"""sync_fixed.py - FIX of sync_every_step.py: the loss is accumulated on the GPU and read once
at the end, so the CPU runs ahead and the GPU never waits for it."""
from _common import fact, need_cuda

torch = need_cuda()
STEPS = 300
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device="cuda")
total = torch.zeros((), device="cuda")
for _ in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.detach()                      # stays on the GPU
print(f"mean loss {total.item() / STEPS:.4f}")  # one synchronization
fact(steps=STEPS, item_syncs=1)
