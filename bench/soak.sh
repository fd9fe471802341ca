#!/usr/bin/env bash
# Soak runs (issue #18): memory and mbufs in use sampled over a long run; after warm-up neither
# may grow. Prints the samples, then one line per quantity: its value at the end of warm-up (the
# first fifth of the run), its maximum after it, and the verdict.
#
#   bench/soak.sh live [SECONDS]          the quickstart (4 namespace hosts, 4 DPDK switches)
#                                         with its pings and both iperf3 runs (9 TCP streams)
#                                         going for SECONDS (default 600); every 10 s the
#                                         process's RSS and the live pool's mbufs in use (DPDK
#                                         telemetry /rocefab/mbufs). Root.
#   bench/soak.sh sim [HOSTS] [DURATION]  a HOSTS-host (default 1024) 2-tier Clos, hosts at
#                                         10 Gb/s, 32 per ToR, 16 spines at 40 Gb/s, RDMA flows of AliStorage2019 sizes
#                                         from every host at 30 % load for DURATION (default
#                                         100ms) of virtual time, on 2 threads; sampled from
#                                         the sim's progress lines (about one a second).
# OUT (default /tmp/rocefab-soak) keeps the run's results and samples.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: bench/soak.sh live [SECONDS] | sim [HOSTS] [DURATION]}
out=${OUT:-/tmp/rocefab-soak}/$mode
rm -rf "$out"
mkdir -p "$out"
bin=${ROCEFAB:-build/rocefab}

verdict() {  # samples.csv (t,rss_mib,mbufs): growth after warm-up
  python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if len(rows) < 10:
    sys.exit(f"soak: only {len(rows)} samples in {sys.argv[1]}")
after = rows[len(rows) // 5:]  # the first fifth is warm-up
q = len(after) // 4
bad = False
for key in ("rss_mib", "mbufs"):
    v = [float(r[key]) for r in after]
    early, late = v[:q], v[-q:]
    # RSS: the last quarter's mean more than 2 % (allocator noise) above the first quarter's.
    # Frames in use go up and down with the traffic: growth is the last quarter's minimum above
    # the first quarter's maximum.
    if key == "rss_mib":
        grows = sum(late) / q > sum(early) / q * 1.02
    else:
        grows = min(late) > max(early)
    bad = bad or grows
    print(f"{key}: after warm-up {v[0]:.0f}, max {max(v):.0f}, last {v[-1]:.0f}; "
          f"first quarter {min(early):.0f}..{max(early):.0f}, last quarter "
          f"{min(late):.0f}..{max(late):.0f}: {'GROWS' if grows else 'no growth'}")
sys.exit(1 if bad else 0)
PY
}

case $mode in
  live)
    secs=${2:-600}
    [ "$(id -u)" = 0 ] || { echo "soak live: needs root (namespaces)" >&2; exit 2; }
    run=rf50ac
    "$bin" live configs/scenarios/quickstart.json --run-id $run --out "$out" \
      --set "traffic.0.interval=100ms" --set "traffic.0.count=$((secs * 10))" \
      --set "traffic.1.duration=${secs}s" --set "traffic.2.duration=${secs}s" \
      --set "traffic.1.start=0s" --set "traffic.2.start=0s" \
      --set "live.timeout=$((secs + 120))s" > "$out/live.log" 2>&1 &
    pid=$!
    trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
    sock=/var/run/dpdk/$run/dpdk_telemetry.v2
    echo "t,rss_mib,mbufs" > "$out/samples.csv"
    t0=$(date +%s)
    until grep -q "traffic started" "$out/live.log" 2>/dev/null; do
      kill -0 $pid 2>/dev/null || { cat "$out/live.log"; exit 1; }
      sleep 0.2  # polls the run's log for its start
    done
    while kill -0 $pid 2>/dev/null; do
      python3 - "$sock" "$pid" "$(( $(date +%s) - t0 ))" >> "$out/samples.csv" <<'PY' || true
import json, socket, sys
sock, pid, t = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sock)
s.recv(1024)  # the greeting
s.send(b"/rocefab/mbufs")
in_use = json.loads(s.recv(65536))["/rocefab/mbufs"]["in_use"]
rss = 0
for line in open(f"/proc/{pid}/status"):
    if line.startswith("VmRSS:"):
        rss = int(line.split()[1]) / 1024
print(f"{t},{rss:.1f},{in_use}")
PY
      sleep 10  # the sampling period
    done
    wait $pid || true
    trap - EXIT
    tail -5 "$out/live.log"
    ;;
  sim)
    hosts=${2:-1024}
    dur=${3:-100ms}
    tors=$(( hosts / 32 ))
    cat > "$out/scenario.json" <<EOF
{
  "name": "soak-${hosts}h",
  "description": "bench/soak.sh sim: ${hosts} hosts, AliStorage2019 RDMA flows at 30 % load",
  "seed": 1,
  "duration": "$dur",
  "topology": {"clos": {"spines": 16, "tors": $tors, "hosts_per_tor": 32,
                        "host_rate": "10Gbps", "link_rate": "40Gbps", "cable": "2m",
                        "host_kind": "builtin"}},
  "nic": {"dcqcn": {"enabled": true}},
  "traffic": [
    {"kind": "workload", "pattern": "poisson", "cdf": "AliStorage2019", "load": 0.3,
     "from": "all", "to": "all", "duration": "$dur"}
  ]
}
EOF
    /usr/bin/time -v "$bin" sim "$out/scenario.json" --threads 2 --out "$out" \
      > "$out/sim.log" 2> "$out/time.txt"
    # "  sim time 5ms / 100ms, ... events/s, N mbufs in use, RSS M MiB" about once a second.
    python3 - "$out/sim.log" > "$out/samples.csv" <<'PY'
import re, sys
print("t,rss_mib,mbufs")
pat = re.compile(r"sim time (\S+) / .* (\d+) mbufs in use, RSS (\d+) MiB")
for line in open(sys.argv[1]):
    m = pat.search(line)
    if m:
        print(f"{m.group(1)},{m.group(3)},{m.group(2)}")
PY
    grep -E "Maximum resident|Elapsed" "$out/time.txt"
    ;;
  *)
    echo "soak: unknown mode $mode (live or sim)" >&2
    exit 2
    ;;
esac
column -s, -t < "$out/samples.csv"
verdict "$out/samples.csv"
