"""p2p_copy.py - device-to-device copies between two GPUs (peer to peer): 10 copies of 64 MiB
from cuda:0 to cuda:1. apx records them as P2P copies with their source and destination
devices. Needs two GPUs (exit 77 otherwise)."""
import sys

from _common import fact, need_cuda

torch = need_cuda()
if torch.cuda.device_count() < 2:
    print("this example needs two GPUs", file=sys.stderr)
    sys.exit(77)
STEPS, MIB = 10, 64
x = torch.randn(MIB * 2**20 // 4, device="cuda:0")
for _ in range(STEPS):
    y = x.to("cuda:1")
torch.cuda.synchronize(0)
torch.cuda.synchronize(1)
fact(p2p_bytes=STEPS * x.numel() * 4, p2p_copies=STEPS,
     peer_access=torch.cuda.can_device_access_peer(0, 1))
