#!/bin/bash
# Faithful live capacity by poll threads: quickstart-rdma-100m with its links scaled to each
# rate, run live on 1..N lcores (RUNS times each) and once in the sim; prints per (lcores, rate)
# how many runs the monitor called faithful, the median late fraction and largest lateness (how
# far behind the clock the loop ran events), the median largest deviation from the exact
# schedule (which decides faithfulness), and write_bw live against sim. "realtime" counts the
# runs whose loop also kept up with the clock (at most max_late_fraction of events later than
# the tolerance), which a fabric with namespace or external hosts needs. The highest rate with every run faithful is the
# faithful capacity of that lcore count. "procs" in place of an lcore count runs the fabric as
# one DPDK process per switch joined by net_memif (rocefab live --processes): on a machine with
# fewer free CPUs than switches its poll threads share CPUs, and it says so.
# Needs root (rocefab live) and a build in build/.
#   bench/live_capacity.sh [LCORES|procs...]  (as root) e.g. bench/live_capacity.sh 1 2 procs
# Environment: RATES (default "100Mbps 1Gbps 2Gbps 5Gbps"), RUNS (default 3).
# Run it on an otherwise idle machine: another process on the CPUs makes every run unfaithful.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${ROCEFAB_BIN:-build/rocefab}
RATES=${RATES:-"100Mbps 1Gbps 2Gbps 5Gbps"}
RUNS=${RUNS:-3}
LCORES=("$@")
[ ${#LCORES[@]} -eq 0 ] && LCORES=(1 2)
WORK=$(mktemp -d /tmp/rocefab_capacity.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

printf '%-7s %-8s %-9s %-9s %-12s %-12s %-12s %-10s %-10s\n' lcores rate faithful realtime \
  late_frac_med late_max_us dev_max_us bw_live bw_sim
for rate in $RATES; do
  python3 - "$rate" "$WORK/s.json" <<'EOF'
import json, sys
j = json.load(open("configs/scenarios/quickstart-rdma-100m.json"))
j["name"] = "capacity-" + sys.argv[1]
j["topology"]["clos"]["link_rate"] = sys.argv[1]
# The bandwidth tests carry as many bytes as at 100 Mb/s times the rate's ratio, so they keep
# the links busy for the same share of the run at every rate.
units = {"Mbps": 1e6, "Gbps": 1e9}
rate = float(sys.argv[1][:-4]) * units[sys.argv[1][-4:]]
for t in j["traffic"]:
    if t["test"] in ("write_bw", "read_bw"):
        t["iterations"] = max(1, round(t["iterations"] * rate / 100e6))
json.dump(j, open(sys.argv[2], "w"))
EOF
  "$BIN" sim "$WORK/s.json" --out "$WORK/sim" -q
  bw_sim=$(python3 -c "import json; print('%.3f' % json.load(open('$WORK/sim/summary.json'))['rdma'][0]['bw_avg_gbps'])")
  for lc in "${LCORES[@]}"; do
    rm -f "$WORK"/live_*.json
    for r in $(seq 1 "$RUNS"); do
      layout=(--lcores "$lc")
      [ "$lc" = procs ] && layout=(--processes)
      rm -rf "$WORK/live"
      "$BIN" live "$WORK/s.json" "${layout[@]}" --out "$WORK/live" -q >/dev/null 2>&1 || true
      cp "$WORK/live/summary.json" "$WORK/live_$r.json"
    done
    python3 - "$lc" "$rate" "$bw_sim" "$WORK" "$RUNS" <<'EOF'
import json, statistics, sys
lc, rate, bw_sim, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
t = [json.load(open(f"{work}/live_{r}.json")) for r in range(1, runs + 1)]
faithful = sum(1 for s in t if s["timing"]["faithful"])
# Real time: the loop also kept up with the clock (what a namespace or external host needs).
realtime = sum(1 for s in t if s["timing"]["late_fraction"] <= s["timing"]["max_late_fraction"])
late = statistics.median(s["timing"]["late_fraction"] for s in t)
late_max = statistics.median(s["timing"]["max_us"] for s in t)
dev_max = statistics.median(s["timing"]["deviation"]["max_us"] for s in t)
bw = statistics.median(s["rdma"][0]["bw_avg_gbps"] for s in t)
print(f"{lc:<7} {rate:<8} {faithful}/{runs:<7} {realtime}/{runs:<7} {late:<12.5f} {late_max:<12.1f} {dev_max:<12.2f} "
      f"{bw:<10.3f} {bw_sim:<10}")
EOF
  done
done
