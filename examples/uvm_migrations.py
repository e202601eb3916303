"""uvm_migrations.py - PROBLEM: unified (managed) memory that ping-pongs between host and GPU.
A 256 MiB cuMemAllocManaged buffer is written by the CPU and then read by the GPU every step:
each GPU touch page-faults and migrates the data into VRAM, each CPU touch migrates it back.
Fixed variant: uvm_fixed.py (device memory + one pinned copy)."""
import ctypes

import numpy as np

from _common import fact, need_cuda

torch = need_cuda()
STEPS, MIB = 5, 256
n = MIB * 2**20 // 4
torch.zeros(1, device="cuda")                   # create the context first
cuda = ctypes.CDLL("libcuda.so.1")
ptr = ctypes.c_uint64(0)
rc = cuda.cuMemAllocManaged(ctypes.byref(ptr), ctypes.c_size_t(n * 4), ctypes.c_uint(1))
assert rc == 0, f"cuMemAllocManaged failed: {rc}"


class Managed:                                  # lets torch see the managed buffer
    __cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr.value, False),
                                "version": 3, "strides": None}


host_view = np.ctypeslib.as_array((ctypes.c_float * n).from_address(ptr.value))
gpu_view = torch.as_tensor(Managed(), device="cuda")
total = 0.0
for i in range(STEPS):
    host_view[:] = float(i)                     # CPU writes: pages migrate to the host
    total += gpu_view.sum().item()              # GPU reads: pages migrate to the GPU
cuda.cuMemFree_v2(ctypes.c_uint64(ptr.value))
fact(steps=STEPS, managed_bytes=n * 4)
