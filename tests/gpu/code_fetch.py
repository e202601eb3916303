"""code_fetch.py OUT - what a kernel's DRAM reads after a full cache flush are made of, on the
kernels of replay_workload.py: ncu --replay-mode application --cache-control all (every cache
invalidated before each pass, the instruction and constant caches too) with the DRAM reads and
the L2 sector misses by who asked, data (srcunit_tex: the SMs' L1) or code and constants
(srcunit_gcc: the GPC's L1.5 cache of instructions and constants). apx's --replay-flush sweeps
L2 with a kernel of its own, which cannot reach those caches; this says how many of ncu's bytes
are fetches that such a sweep leaves out (the randn kernel's reads, flush/known-differences.txt).
Prints per kernel the median over launches 3-5 (all launches for one launched fewer times);
writes OUT/code-fetch.csv. GPU machine (torch, ncu); about 30 s."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_run  # noqa: E402

if len(sys.argv) != 2:
    sys.exit("usage: code_fetch.py OUT")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
READ, TEX, GCC = ("dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
                  "lts__t_sectors_srcunit_gcc_lookup_miss.sum")
rc, rows, err = ncu_run.run(ncu_run.find("code_fetch.py"), "application", "all", [READ, TEX, GCC],
                            os.path.join(out, "code-fetch.csv"))
print(f"ncu exit {rc}, {len(rows)} kernels" + (f": {err[-300:]}" if rc else ""))
per, seen = {}, {}
for d in rows:
    name = d.get("Kernel Name", "")
    o = seen[name] = seen.get(name, -1) + 1
    per.setdefault(name, []).append((o, [ncu_run.value(d, m) for m in (READ, TEX, GCC)]))
# (L2 sector lookups that missed are not DRAM bytes: on the H200 the attention kernel's data
# misses came to 63.8 MB against 50.4 MB read from DRAM; they tell which requester the reads
# can come from: none from data where data missed nothing)
print(f"\n{'kernel':12s} {'launches':>8s} {'DRAM read B':>12s} {'data misses B':>14s} "
      f"{'code+const misses B':>20s}")
for name, launches in sorted(per.items(), key=lambda kv: str(ncu_run.kind_of(kv[0]))):
    use = [v for o, v in launches if 3 <= o <= 5] or [v for _, v in launches]
    if any(x is None for v in use for x in v):
        print(f"{str(ncu_run.kind_of(name)):12s} {len(launches):8d}  (a counter missing)")
        continue
    read, tex, gcc = (statistics.median(v[i] for v in use) for i in range(3))
    print(f"{str(ncu_run.kind_of(name)):12s} {len(launches):8d} {read:12.0f} {32 * tex:14.0f} "
          f"{32 * gcc:20.0f}")
