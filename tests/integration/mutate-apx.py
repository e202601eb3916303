#!/usr/bin/env python3
# mutate-apx.py - checksum-valid mutants of an .apx trace for hostile-input.sh
# (section 3b): each copy has 1-3 bits flipped after the preamble, then every chunk's payload and
# header CRC32C recomputed (as tests/props' apx_props_reseal), so the damage reaches the
# record decoders instead of stopping at a checksum. Deterministic (seeded).
# Usage: mutate-apx.py TRACE OUTDIR COUNT [SEED]  ->  OUTDIR/mSEED-000.apx ...
import random, struct, sys
def crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t
T = crc_table()
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
def reseal(b):
    off = 16
    while off + 32 <= len(b):
        plen = struct.unpack_from("<I", b, off + 12)[0]
        if plen > len(b) - off - 32:
            break
        struct.pack_into("<I", b, off + 24, crc32c(b[off + 32:off + 32 + plen]))
        struct.pack_into("<I", b, off + 28, crc32c(b[off:off + 28]))
        off += 32 + plen
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 38
data = open(src, "rb").read()
rng = random.Random(seed)
for i in range(n):
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        p = rng.randrange(16, len(b))
        b[p] ^= 1 << rng.randrange(8)
    reseal(b)
    open("%s/m%d-%03d.apx" % (out, seed, i), "wb").write(b)
