#!/usr/bin/env bash
# bench/sim_scale.sh: memory and set-up time of the sim runner for fabrics of 1k to 16k hosts
# (#19 scope 3).
#
#   bench/sim_scale.sh [BUILD] [FABRIC...]
#
# FABRIC is one of 2t-1k 2t-4k 3t-4k 3t-16k (default: all four), every link 100 Gb/s with 1 us
# cables, 32 hosts per ToR, 2:1 oversubscribed at every tier, 64 MB switch buffers:
#   2t-1k   32 ToRs, 16 spines                                   (48 switches)
#   2t-4k   128 ToRs, 16 spines                                  (144 switches)
#   3t-4k   4 podsets of 32 ToRs and 16 leaves, 16 planes of 16 spines  (448 switches)
#   3t-16k  16 podsets of 32 ToRs and 16 leaves, 256 spines      (1,024 switches)
# Each fabric runs twice from configs/scenarios/large/leaf-spine-1024h.json, one after the other:
#   - empty: no traffic, 1 us simulated: what the fabric itself takes (switches, ports, queues,
#     hosts, NICs, routes, the frame pool's first 16,384 frames) and how long it takes to build;
#   - loaded: AliStorage2019 at 25 % host load for 100 us, 200 us simulated (then the usual
#     10 ms drain), the frame pool left to grow as the fabric needs (no sim.mbufs cap: the
#     scenario's 524,287 is lifted to what memory allows), about 1.44 KB a frame at the
#     scenario's MTU of 1,024 (LargestSimFrame).
# It prints one row per run: hosts, switch ports, set-up seconds, the process's largest resident
# memory (MiB), KiB per host (RSS less a 1-host fabric's, divided by the hosts), and for loaded
# runs the wall time, the most frames in use at the progress lines (sampled, about once a second
# of wall time), the frames the pool grew to, and the failed frame allocations (0: the pool had
# room for every frame).
# Figures go to docs/experiments.md ("Memory and set-up at scale").
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ -d "$1" ]; then build=$1; shift; fi
fabrics=("$@")
[ ${#fabrics[@]} -eq 0 ] && fabrics=(2t-1k 2t-4k 3t-4k 3t-16k)
bin=$PWD/$build/rocefab
sc=$PWD/configs/scenarios/large/leaf-spine-1024h.json
work=$(mktemp -d /tmp/rocefab-sim-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

clos() {  # the --set arguments of one fabric
  case "$1" in
    base) echo "topology.clos={\"spines\":1,\"tors\":1,\"hosts_per_tor\":1,\"link_rate\":\"100Gbps\",\"cable\":\"200m\",\"host_kind\":\"builtin\"}" ;;
    2t-1k) echo "topology.clos={\"spines\":16,\"tors\":32,\"hosts_per_tor\":32,\"link_rate\":\"100Gbps\",\"cable\":\"200m\",\"host_kind\":\"builtin\"}" ;;
    2t-4k) echo "topology.clos={\"spines\":16,\"tors\":128,\"hosts_per_tor\":32,\"link_rate\":\"100Gbps\",\"cable\":\"200m\",\"host_kind\":\"builtin\"}" ;;
    3t-4k) echo "topology.clos={\"tiers\":3,\"podsets\":4,\"leaves_per_podset\":16,\"spines\":256,\"tors\":32,\"hosts_per_tor\":32,\"link_rate\":\"100Gbps\",\"cable\":\"200m\",\"host_kind\":\"builtin\"}" ;;
    3t-16k) echo "topology.clos={\"tiers\":3,\"podsets\":16,\"leaves_per_podset\":16,\"spines\":256,\"tors\":32,\"hosts_per_tor\":32,\"link_rate\":\"100Gbps\",\"cable\":\"200m\",\"host_kind\":\"builtin\"}" ;;
    *) echo "bench/sim_scale.sh: unknown fabric $1 (2t-1k 2t-4k 3t-4k 3t-16k)" >&2; exit 2 ;;
  esac
}

run() {  # FABRIC KIND: one run, its log and /usr/bin/time's report under $work
  local f=$1 kind=$2 sets
  if [ "$kind" = empty ]; then
    sets=(--set "traffic=[]" --set duration=1us --set sim.mbufs=0)
  else
    sets=(--set duration=200us --set traffic.0.duration=100us --set sim.mbufs=0)
  fi
  /usr/bin/time -v "$bin" sim "$sc" --set "$(clos "$f")" --set buffer.size=64MB "${sets[@]}" --threads 1 \
    --out "$work/$f-$kind" > "$work/$f-$kind.log" 2> "$work/$f-$kind.time"
}

run base empty
printf "%-7s %-6s %7s %7s %8s %9s %9s %8s %11s %10s %s\n" fabric run hosts ports setup_s rss_mib \
  "KiB/host" wall_s "most_frames" "pool" "alloc_failures"
for f in "${fabrics[@]}"; do
  for kind in empty loaded; do
    run "$f" "$kind"
    python3 - "$work" "$f" "$kind" <<'PY'
import json, re, sys
work, f, kind = sys.argv[1:4]
def rss(name):
    t = open(f"{work}/{name}.time").read()
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
def wall(name):
    t = open(f"{work}/{name}.time").read()
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
    return int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
log = open(f"{work}/{f}-{kind}.log").read()
m = re.search(r"(\d+) switches, (\d+) hosts, (\d+) links", log)
switches, hosts, links = (int(x) for x in m.groups())
ports = 2 * links - hosts  # every link has two ends; a host's end is not a switch port
setup = float(re.search(r"set up in ([\d.]+) s", log).group(1))
r = rss(f"{f}-{kind}")
per_host = (r - rss("base-empty")) / hosts
most = re.findall(r"(\d+) mbufs in use", log)
most = max(int(x) for x in most) if most else 0
pool = re.findall(r"frame pool (\d+)", log)
pool = max(int(x) for x in pool) if pool else 0
fails = json.load(open(f"{work}/{f}-{kind}/summary.json")).get("mbuf_alloc_failures", 0)
loaded = kind == "loaded"
print(f"{f:<7} {kind:<6} {hosts:7d} {ports:7d} {setup:8.2f} {r / 1024:9.0f} {per_host:9.1f} "
      f"{wall(f + '-' + kind):8.1f} {most if loaded else '-':>11} {pool:10d} {fails if loaded else '-'}",
      flush=True)
PY
  done
done
