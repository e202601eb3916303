"""cpu_only.py - a program that never touches CUDA (apx analyze must still write a valid
trace that says so, and exit with the program's status). Usage: cpu_only.py [EXIT_STATUS]"""
import sys
import time

t0 = time.perf_counter()
total = 0
for i in range(2_000_000):
    total += i * i
print(f"cpu_only: sum of squares {total} in {time.perf_counter() - t0:.2f} s")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
