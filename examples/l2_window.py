"""l2_window.py - an L2 persisting access-policy window set through the CUDA runtime (ctypes):
cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 8 MiB) and cudaStreamSetAttribute(stream,
AccessPolicyWindow, {base of a 4 MiB tensor, 4 MiB, hitRatio 1.0, PERSISTING, STREAMING}); the
kernels on that stream re-read the 4 MiB tensor while streaming through a large one. apx must
record the set-aside, the window, and the window on each kernel of the stream. Variant without:
l2_window_none.py."""
import ctypes
import sys

from _common import fact, need_cuda

torch = need_cuda()
SET_ASIDE, WINDOW, STEPS = 8 << 20, 4 << 20, 50
use_window = "--none" not in sys.argv


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hitRatio", ctypes.c_float), ("hitProp", ctypes.c_int),
                ("missProp", ctypes.c_int)]


class StreamAttrValue(ctypes.Union):           # cudaLaunchAttributeValue: 64 bytes
    _fields_ = [("accessPolicyWindow", AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


hot = torch.randn(WINDOW // 4, device="cuda")
cold = torch.randn(256 << 20 >> 2, device="cuda")
stream = torch.cuda.Stream()
if use_window:
    try:
        rt = ctypes.CDLL("libcudart.so.13")     # the runtime PyTorch already loaded
        set_limit, set_attr = rt.cudaDeviceSetLimit, rt.cudaStreamSetAttribute
    except OSError:                             # fall back to the driver API
        rt = ctypes.CDLL("libcuda.so.1")
        set_limit, set_attr = rt.cuCtxSetLimit, rt.cuStreamSetAttribute
    assert set_limit(ctypes.c_int(6), ctypes.c_size_t(SET_ASIDE)) == 0
    v = StreamAttrValue()
    v.accessPolicyWindow = AccessPolicyWindow(hot.data_ptr(), WINDOW, 1.0, 2, 1)
    assert set_attr(ctypes.c_void_p(stream.cuda_stream), ctypes.c_int(1), ctypes.byref(v)) == 0
with torch.cuda.stream(stream):
    acc = torch.zeros_like(hot)
    for _ in range(STEPS):
        acc += hot * 2.0                        # re-reads the 4 MiB window
        cold.mul_(1.0001)                       # streams 256 MiB through L2
torch.cuda.synchronize()
fact(window=use_window, l2_set_aside=SET_ASIDE if use_window else 0,
     apw_base=hot.data_ptr() if use_window else 0, apw_bytes=WINDOW if use_window else 0,
     apw_hit_ppm=1000000 if use_window else 0, stream_kernels=STEPS * 3)
