"""many_threads.py - a program of tests/gpu/pystack run by pystack_check.py on the
GPU machine with and without `apx analyze`: a bf16 CNN training loop fed by a DataLoader (4
worker processes, pinned memory: its pin-memory thread) in a process that also runs about 190
Python threads of the kinds services and libraries leave around: waiters on Events, on a
Condition that a producer notifies, on a queue (a ThreadPoolExecutor fed small tasks), in
time.sleep loops, and blocked reading pipes. With CUDA's and torch's own threads that is
at least --min-threads threads in this process (counted from /proc/self/task and printed).
apx's Python sampler reads every thread's stack 200 times a second: the program must run
unharmed under it (exit 0, step time near that without apx).

    python3 many_threads.py [--steps N] [--warmup W] [--min-threads N]

Prints THREADS <threads in this process> (during the timed steps), then STEP_MS <median ms a
step> as its last line."""
import argparse
import concurrent.futures
import hashlib
import json
import os
import statistics
import sys
import threading
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

BATCH, RES, CLASSES = 64, 64, 100


class Images(Dataset):
    """Made-up 3xRESxRES images and labels, the same for an index every time (seeded), with a
    random flip as the augmentation: a little CPU work a sample in the workers."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, RES, RES, generator=g)
        if i % 2:
            x = x.flip(-1)
        return x, i % CLASSES


def model():
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))
    return nn.Sequential(block(3, 64), block(64, 128), block(128, 256), block(256, 256),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, CLASSES))


class Crowd:
    """The background threads, started by start(), stopped and joined by stop()."""

    def __init__(self):
        self.stop_ev = threading.Event()
        self.cond = threading.Condition()
        self.ticks = 0
        self.pool = None
        self.pipes = []
        self.threads = []

    def _spawn(self, target, name, *args):
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        t.start()
        self.threads.append(t)

    def _event_waiter(self, ev):            # parked on an Event until the end
        ev.wait()

    def _polling_waiter(self):              # wakes every 50 ms to look at a flag
        while not self.stop_ev.wait(0.05):
            pass

    def _cond_waiter(self):                 # a consumer woken by the producer's notify
        seen = 0
        while not self.stop_ev.is_set():
            with self.cond:
                self.cond.wait_for(lambda: self.ticks != seen or self.stop_ev.is_set(), 1.0)
                seen = self.ticks
            sum(range(200))

    def _producer(self):                    # notifies a few consumers every 10 ms
        while not self.stop_ev.wait(0.01):
            with self.cond:
                self.ticks += 1
                self.cond.notify(4)

    def _sleeper(self, period):             # a heartbeat: sleeps, then a little work
        while not self.stop_ev.is_set():
            time.sleep(period)
            json.dumps({"t": time.time(), "n": period})

    def _reader(self, fd):                  # blocked in read(2) until its pipe closes
        while os.read(fd, 64):
            pass

    def _submitter(self):                   # small tasks to the pool, about 500 a second
        while not self.stop_ev.wait(0.002):
            self.pool.submit(hashlib.sha256, b"x" * 4096)

    def start(self, n_event=50, n_poll=20, n_cond=40, n_sleep=40, n_read=10, n_pool=28):
        ev = threading.Event()
        self.park = ev
        for i in range(n_event):
            self._spawn(self._event_waiter, f"event-{i}", ev)
        for i in range(n_poll):
            self._spawn(self._polling_waiter, f"poll-{i}")
        for i in range(n_cond):
            self._spawn(self._cond_waiter, f"cond-{i}")
        self._spawn(self._producer, "producer")
        for i in range(n_sleep):
            self._spawn(self._sleeper, f"sleep-{i}", 0.005 + 0.045 * i / max(1, n_sleep - 1))
        for i in range(n_read):
            r, w = os.pipe()
            self.pipes.append(w)
            self._spawn(self._reader, f"read-{i}", r)
        self.pool = concurrent.futures.ThreadPoolExecutor(n_pool, thread_name_prefix="pool")
        list(self.pool.map(time.sleep, [0.05] * n_pool))   # all n_pool workers started
        self._spawn(self._submitter, "submitter")

    def add(self, n):
        """n more parked threads (to reach --min-threads where torch starts fewer threads)"""
        for i in range(n):
            self._spawn(self._event_waiter, f"extra-{i}", self.park)

    def stop(self):
        self.stop_ev.set()
        self.park.set()
        with self.cond:
            self.cond.notify_all()
        for w in self.pipes:
            os.close(w)
        for t in self.threads:
            t.join(5)
        self.pool.shutdown(wait=True)
        return sum(t.is_alive() for t in self.threads)


def nthreads():
    return len(os.listdir("/proc/self/task"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--block", type=int, default=10, help="steps between two synchronizations")
    ap.add_argument("--min-threads", type=int, default=200)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("many_threads.py: no CUDA GPU", file=sys.stderr)
        sys.exit(77)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    net = model().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(Images(), batch_size=BATCH, shuffle=True, num_workers=4,
                        pin_memory=True, persistent_workers=True, prefetch_factor=4)
    batches = iter(loader)      # the workers fork here, before the crowd of threads exists
    crowd = Crowd()
    crowd.start()
    if nthreads() < a.min_threads:
        crowd.add(a.min_threads - nthreads() + 5)

    def step():
        x, y = next(batches)
        x = x.to("cuda", non_blocking=True).to(memory_format=torch.channels_last)
        y = y.to("cuda", non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    print(f"THREADS {nthreads()}", flush=True)
    times = []
    for _ in range(max(1, a.steps // a.block)):
        t0 = time.perf_counter()
        for _ in range(a.block):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / a.block)
    alive = crowd.stop()
    print(f"STOPPED threads left {alive}", flush=True)
    print(f"STEP_MS {statistics.median(times):.3f}", flush=True)


if __name__ == "__main__":
    main()
