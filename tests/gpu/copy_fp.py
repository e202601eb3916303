"""copy_fp.py - the Python mirror of the collector's copy fingerprint (lib/collector/copy_fp.c,
docs/collector.md): check_facts.py computes with it the fingerprints an example's copies must
carry. `copy_fp.py BUILD` (ctest collector_copy_fp_mirror) compares it with the C function on
the patterned buffers `test-copy-fp --print` hashes; exit 1 on any difference."""
import os
import subprocess
import sys

M = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
SAMPLES, SAMPLE = 4, 64


def _round(h, w):
    h ^= (w * P2) & M
    h = ((h << 31) | (h >> 33)) & M
    return (h * P1) & M


def _mix(h, data):
    for i in range(0, len(data), 8):
        h = _round(h, int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little"))
    return h


def copy_fp(read, addr, n):
    """The fingerprint of n bytes at host address addr; read(off, length) gives the bytes."""
    if n == 0:
        return 0
    h = P3 ^ ((n * P1) & M)
    if n <= SAMPLES * SAMPLE:
        h = _mix(h, read(0, n))
    else:
        span = n - SAMPLE
        for k in range(SAMPLES):
            off = span // (SAMPLES - 1) * k
            if 0 < k < SAMPLES - 1:
                off -= (addr + off) & (SAMPLE - 1)
            if k == SAMPLES - 1:
                off = span
            h = _mix(h, read(off, SAMPLE))
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    h ^= h >> 32
    return h or 1


def const_fp(pattern, addr, n):
    """The fingerprint of n bytes filled with a repeated pattern (e.g. one float32)."""
    def read(off, length):
        return bytes(pattern[(off + i) % len(pattern)] for i in range(length))
    return copy_fp(read, addr, n)


def _pattern(n, seed):  # test_copy_fp.c's buffer()
    return bytes((i * 131 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


if __name__ == "__main__":
    out = subprocess.run([os.path.join(sys.argv[1], "test-copy-fp"), "--print"],
                         capture_output=True, text=True, check=True).stdout
    bad = 0
    for line in out.splitlines():
        align, n, want = (int(x) for x in line.split())
        data = _pattern(n, 1)
        got = copy_fp(lambda off, length: data[off:off + length], align, n)
        if got != want:
            print(f"FAIL {n} bytes at 64k+{align}: python {got:#x}, C {want:#x}")
            bad += 1
    print(f"copy_fp mirror: {len(out.splitlines()) - bad} equal, {bad} different")
    sys.exit(1 if bad else 0)
