"""replay_workload.py - the kernels replay_check.py measures twice, with `apx analyze --replay`
and with ncu: a bf16 GEMM, a memory-bound elementwise kernel, a reduction and an attention
kernel, each launched 6 times on fixed inputs (same shapes, same data in both runs)."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")
a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
x = torch.randn(64 << 20, device=dev)            # 256 MiB fp32
y = torch.empty_like(x)
q = torch.randn(8, 16, 1024, 64, device=dev, dtype=torch.bfloat16)
k = torch.randn_like(q)
v = torch.randn_like(q)
torch.cuda.synchronize()
for _ in range(6):
    torch.matmul(a, b)
    torch.mul(x, 3.0, out=y)
    x.sum()
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
print("done", flush=True)
