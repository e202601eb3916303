# fakecuda.py - the traced program of test-uprobes.sh: loads the stand-in libcuda.so.1 (argv[1])
# through ctypes, waits until the test says nvperfd's probes are attached (a line on the FIFO
# argv[2]), then makes driver calls of known sizes from pinned and pageable memory.
# argv[3]: "calls" (the known set below, then a second FIFO line before exiting) or "storm"
# (many small copies: the rate cap).
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
with open(sys.argv[2]) as f:
    f.readline()
vp = ctypes.c_void_p
u64 = ctypes.c_uint64
sz = ctypes.c_size_t
lib.cuMemHostAlloc.argtypes = [ctypes.POINTER(vp), sz, ctypes.c_uint]
lib.cuMemAllocHost_v2.argtypes = [ctypes.POINTER(vp), sz]
lib.cuMemHostRegister_v2.argtypes = [vp, sz, ctypes.c_uint]
lib.cuMemFreeHost.argtypes = [vp]
lib.cuMemHostUnregister.argtypes = [vp]
lib.cuMemcpyHtoD_v2.argtypes = [u64, vp, sz]
lib.cuMemcpyHtoDAsync_v2.argtypes = [u64, vp, sz, vp]
lib.cuMemcpyDtoH_v2.argtypes = [vp, u64, sz]
lib.cuMemcpyDtoHAsync_v2.argtypes = [vp, u64, sz, vp]
lib.cuCtxSetLimit.argtypes = [ctypes.c_int, sz]
lib.cuStreamSetAttribute.argtypes = [vp, ctypes.c_int, vp]


class Window(ctypes.Structure):  # CUaccessPolicyWindow
    _fields_ = [("base_ptr", vp), ("num_bytes", sz), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


DEV = 0x7f0000000000
pageable = ctypes.create_string_buffer(4 << 20)
pa = ctypes.addressof(pageable)

if sys.argv[3] == "storm":
    for i in range(20000):
        lib.cuMemcpyHtoD_v2(DEV, pa, 1)
    sys.exit(0)

p, q = vp(), vp()
assert lib.cuMemHostAlloc(ctypes.byref(p), 1 << 20, 0) == 0
assert lib.cuMemAllocHost_v2(ctypes.byref(q), 64 << 10) == 0
reg = ctypes.create_string_buffer(256 << 10)
ra = ctypes.addressof(reg)
assert lib.cuMemHostRegister_v2(ra, 256 << 10, 0) == 0

for _ in range(3):                      # H2D pinned: 3 x 1000
    lib.cuMemcpyHtoD_v2(DEV, p.value + 100, 1000)
for _ in range(2):                      # H2D pinned (registered): 2 x 512
    lib.cuMemcpyHtoDAsync_v2(DEV, ra + 4096, 512, None)
for _ in range(5):                      # H2D pageable: 5 x 4096
    lib.cuMemcpyHtoDAsync_v2(DEV, pa + 8, 4096, None)
for _ in range(2):                      # D2H pageable: 2 x 8192
    lib.cuMemcpyDtoH_v2(pa, DEV, 8192)
for _ in range(4):                      # D2H pinned: 4 x 100
    lib.cuMemcpyDtoHAsync_v2(q.value + 1, DEV, 100, None)

lib.cuCtxSetLimit(6, 3 << 20)           # CU_LIMIT_PERSISTING_L2_CACHE_SIZE: recorded
lib.cuCtxSetLimit(1, 12345)             # another limit: not recorded
w = Window(p.value, 65536, 0.6, 2, 1)   # persisting hits, streaming misses
lib.cuStreamSetAttribute(0x1234, 1, ctypes.addressof(w))
lib.cuStreamSetAttribute(0x1234, 3, ctypes.addressof(w))   # another attribute: not recorded

lib.cuMemHostUnregister(ra)
lib.cuMemcpyHtoD_v2(DEV, ra + 4096, 77)  # no longer pinned: pageable 77
lib.cuMemFreeHost(p)
with open(sys.argv[2]) as f:            # hold on until the test has seen `apx status`
    f.readline()
print("done", flush=True)
