# torch.cuda stand-in: two devices, device 1 never used; values set by the test script.
from . import memory  # noqa: F401

_initialized = False
allocated = [0, 0]
reserved = [0, 0]
peak = [0, 0]
calls = [0]


def is_initialized():
    return _initialized


def device_count():
    return 2


def memory_allocated(d):
    calls[0] += 1
    return allocated[d]


def memory_reserved(d):
    return reserved[d]


def max_memory_allocated(d):
    return peak[d]
