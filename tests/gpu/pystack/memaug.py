# memaug.py - the function memphases.py's check traces from outside (apx analyze
# --trace-functions memaug:augment): host-side "augmentation", about 20 ms of Python a call.
import time


def augment(x):
    t0 = time.perf_counter()
    acc = 0
    while time.perf_counter() - t0 < 0.02:
        acc += 1
    return x.flip(-1) if acc % 2 else x
