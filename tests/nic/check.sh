#!/bin/sh
# check.sh HARNESS APX DIR - the NIC source end to end without a GPU: apx-nic-harness samples
# lo at 1 kHz while it sends bytes over loopback; apx report's metrics section must show lo
# with a mean rx rate times the sampled span of at least 90 % of the bytes sent (what is sent
# before the first or after the last sample falls outside the span; label unit).
set -eu
h=$1 apx=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
rc=0; sent=$("$h" "$dir/nic.apx") || rc=$?
[ "$rc" = 77 ] && { echo "no /sys/class/net/lo: skipped"; exit 77; }
[ "$rc" = 0 ] || { echo "harness failed ($rc)"; exit 1; }
"$apx" report --format json --section metrics "$dir/nic.apx" > "$dir/report.json"
"$apx" report --section metrics "$dir/nic.apx" > "$dir/report.txt"
grep -q "no RDMA NIC on this host" "$dir/report.txt" || { echo "no 'no RDMA NIC' note"; exit 1; }
python3 - "$dir/report.json" "$sent" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); sent = int(sys.argv[2])
rows = doc["nic"]
lo = [r for r in rows if r["device"] == "lo"]
assert len(lo) == 1 and lo[0]["kind"] == "net", rows
r = lo[0]
got = r["rx_bytes_per_s"] * r["span_ns"] / 1e9
print("lo: rx %.0f B/s over %.3f s = %.0f bytes, %d sent; max %.0f B/s, rx packet %s B"
      % (r["rx_bytes_per_s"], r["span_ns"] / 1e9, got, sent, r["rx_bytes_per_s_max"],
         r["rx_packet_bytes"]))
assert r["samples"] >= 2
assert got >= sent * 0.9, (got, sent)   # bytes sent at the edges of the sampled span: not counted
assert r["rx_bytes_per_s_max"] >= r["rx_bytes_per_s"]
assert r["rx_packet_bytes"] > 1000   # 8 KiB datagrams
PY
