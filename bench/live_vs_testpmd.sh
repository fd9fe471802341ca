#!/usr/bin/env bash
# Live-runner throughput and latency next to dpdk-testpmd io forwarding, in one run, on the same
# kind of ports (veth + net_af_packet, host-side TX checksum offload off).
#
#   baseline : ns A <-veth-> [testpmd io fwd, 1 hop] <-veth-> ns B
#   rocefab  : h0 <-veth-> [tor0 -> spine -> tor1, 3 switch hops] <-veth-> h2 (quickstart fabric)
#
# Prints iperf3 TCP Gb/s (1 stream, best of REPEAT) and ping p50/p99 (PINGS probes at 1 ms).
# Root needed. Usage: bench/live_vs_testpmd.sh [build-dir]   (env: SECONDS_TCP=5 PINGS=500 REPEAT=2)
set -euo pipefail
BUILD=${1:-build}
SECONDS_TCP=${SECONDS_TCP:-5}
PINGS=${PINGS:-500}
REPEAT=${REPEAT:-2}
ID=bt$$
NSA=${ID}a NSB=${ID}b
TMP=$(mktemp -d)
TPMD=""
cleanup() {
  [ -n "$TPMD" ] && kill "$TPMD" 2>/dev/null && wait "$TPMD" 2>/dev/null || true
  ip netns del "$NSA" 2>/dev/null || true
  ip netns del "$NSB" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

pct() {  # pct P < values (one per line): nearest-rank percentile
  sort -n | awk -v p="$1" '{v[NR]=$1} END {r=int(p*NR+0.999999); if (r<1) r=1; print v[r]}'
}
ping_stats() {  # ns dst -> "p50 p99" in us
  ip netns exec "$1" ping -n -q -c 3 -i 0.01 "$2" >/dev/null 2>&1 || true
  ip netns exec "$1" ping -n -c "$PINGS" -i 0.001 "$2" | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' \
    | awk '{print $1*1000}' > "$TMP/rtt"
  echo "$(pct 0.5 < "$TMP/rtt") $(pct 0.99 < "$TMP/rtt")"
}
tcp_gbps() {  # client-ns server-ns server-ip
  local best=0
  for _ in $(seq "$REPEAT"); do
    ip netns exec "$2" iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
    local srv=$!
    for _ in $(seq 500); do ip netns exec "$2" ss -Hltn 'sport = :5299' | grep -q . && break; sleep 0.01; done
    local g
    g=$(ip netns exec "$1" iperf3 -c "$3" -p 5299 -t "$SECONDS_TCP" -J | python3 -c \
      'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9,3))')
    wait "$srv" 2>/dev/null || true
    best=$(python3 -c "print(max($best, $g))")
  done
  echo "$best"
}

# --- baseline: testpmd io forwarding between two namespaces ---
for n in a b; do
  ns=${ID}$n
  ip netns add "$ns"
  ip link add "${ID}s$n" type veth peer name "${ID}h$n"
  ip link set "${ID}h$n" netns "$ns"
  ip -n "$ns" link set "${ID}h$n" name eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null
  ip link set "${ID}s$n" up
  ethtool -K "${ID}s$n" tx off gro off >/dev/null 2>&1 || true
done
ip -n "$NSA" addr add 192.168.77.1/24 dev eth0
ip -n "$NSB" addr add 192.168.77.2/24 dev eth0
dpdk-testpmd -l 0-1 --no-pci --no-huge -m 512 --no-shconf --file-prefix "$ID" \
  --vdev "net_af_packet0,iface=${ID}sa" --vdev "net_af_packet1,iface=${ID}sb" -- \
  --forward-mode=io --stats-period 1000 --total-num-mbufs=32768 > "$TMP/testpmd.log" 2>&1 &
TPMD=$!
for _ in $(seq 500); do
  kill -0 "$TPMD" 2>/dev/null || { cat "$TMP/testpmd.log"; echo "testpmd failed" >&2; exit 1; }
  grep -q "Port statistics" "$TMP/testpmd.log" && break
  sleep 0.01
done
read -r B50 B99 < <(ping_stats "$NSA" 192.168.77.2)
BTCP=$(tcp_gbps "$NSA" "$NSB" 192.168.77.2)
kill "$TPMD"; wait "$TPMD" 2>/dev/null || true; TPMD=""
ip netns del "$NSA"; ip netns del "$NSB"

# --- rocefab: quickstart fabric, h0 (tor0) -> h2 (tor1) ---
cat > "$TMP/bench.json" <<JSON
{"name": "bench-live", "duration": "1ms",
 "topology": {"clos": {"spines": 2, "tors": 2, "hosts_per_tor": 2, "link_rate": "10Gbps", "cable": "5m"}},
 "traffic": [{"kind": "ping", "from": "h0", "to": "h2", "count": $PINGS, "interval": "1ms"},
             {"kind": "iperf3", "from": "h0", "to": "h2", "duration": "${SECONDS_TCP}s", "start": "1s"}]}
JSON
best=0
for i in $(seq "$REPEAT"); do
  "$BUILD/rocefab" live "$TMP/bench.json" --out "$TMP/r$i" -q
  g=$(python3 -c "import json; print(json.load(open('$TMP/r$i/summary.json'))['iperf3'][0]['gbps'])")
  best=$(python3 -c "print(max($best, $g))")
done
read -r R50 R99 < <(python3 -c "
import json; p=json.load(open('$TMP/r1/summary.json'))['pings'][0]; print(p['rtt_p50_us'], p['rtt_p99_us'])")

printf '\n%-34s %10s %12s %12s\n' "path" "TCP Gb/s" "ping p50 us" "ping p99 us"
printf '%-34s %10s %12s %12s\n' "testpmd io fwd (1 hop)" "$BTCP" "$B50" "$B99"
printf '%-34s %10s %12s %12s\n' "rocefab quickstart (3 switch hops)" "$(python3 -c "print(round($best,3))")" "$R50" "$R99"
python3 -c "print('rocefab/testpmd TCP ratio: %.2f (target >= 0.80); added ping p99: %.1f us (target <= 20)' % ($best/$BTCP if $BTCP else 0, $R99-$B99))"
