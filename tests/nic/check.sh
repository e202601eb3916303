#!/bin/sh
# check.sh HARNESS APX DIR - the NIC source end to end without a GPU: apx-nic-harness samples
# lo at 1 kHz while it sends bytes over loopback; apx report's metrics section must show lo
# with a mean rx rate times the sampled span of at least 90 % of the bytes sent (what is sent
# before the first or after the last sample falls outside the span; label unit). Then a rank
# of a multi-process job without --nic-metrics on a made-up sysfs (eth9 up at 100 Gb/s, eth8
# down): the trace holds eth9's line rate once, no counter, and says "line rates only".
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

# ---- without --nic-metrics, a rank (WORLD_SIZE=2): the line rates only ----
sys="$dir/sys"
for d in eth9 eth8; do
	mkdir -p "$sys/class/net/$d/device" "$sys/class/net/$d/statistics"
	for c in rx_bytes tx_bytes rx_packets tx_packets; do echo 5 > "$sys/class/net/$d/statistics/$c"; done
	echo 100000 > "$sys/class/net/$d/speed"
done
echo up > "$sys/class/net/eth9/operstate"
echo down > "$sys/class/net/eth8/operstate"
"$h" "$dir/rates.apx" rates-only "$sys" || { echo "rates-only harness failed"; exit 1; }
apxdump=$(dirname "$apx")/apx-dump
[ -x "$apxdump" ] || { echo "no apx-dump beside apx"; exit 1; }
{
	"$apxdump" "$dir/rates.apx" > "$dir/rates.dump"
	n=$(grep -c '"type":"metric"' "$dir/rates.dump" || true)
	grep -q '"nic_metrics","value":"line rates only (1 link;' "$dir/rates.dump" ||
		{ echo "no 'line rates only' kv"; exit 1; }
	grep -q 'nic.eth9.line_rate' "$dir/rates.dump" || { echo "no eth9 line rate"; exit 1; }
	! grep -q 'nic.eth8' "$dir/rates.dump" || { echo "eth8 is down: no line rate"; exit 1; }
	[ "$n" = 1 ] || { echo "$n metric records: the line rate only, once, expected"; exit 1; }
	grep '"type":"metric"' "$dir/rates.dump" | grep -q '1e+11\|100000000000' ||
		{ echo "eth9's line rate is not 100 Gb/s"; grep metric "$dir/rates.dump"; exit 1; }
}
echo "rates-only: eth9 100 Gb/s recorded once, eth8 (down) not, no counter sampled: ok"
