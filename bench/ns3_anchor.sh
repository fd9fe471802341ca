#!/usr/bin/env bash
# rocefab's sim runner on the reference ConWeave ns-3 anchor trace (shared/data/anchor-ns3:
# 97,984 AliStorage flows, 128 hosts, 100 Gb/s leaf-spine), next to the reference's own figures on
# this machine class. Prints wall time, peak memory, events and packet-hops per wall second, and
# the slowdown table. Usage: bench/ns3_anchor.sh [build-dir] [ecmp|conweave] [seed] [threads]
# (seed: overrides the scenario's seed 1, which drives ECMP hashing, ECN marking and DCQCN; the
# seed-to-seed spread of the slowdowns is in docs/experiments.md. threads: 1..64 or auto, the
# default: one per CPU, at most one per ToR; results are identical for every thread count)
set -euo pipefail
BUILD=${1:-build}
SCHEME=${2:-ecmp}
SEED=${3:-}
THREADS=${4:-auto}
if [ "$THREADS" != auto ] && { ! [[ "$THREADS" =~ ^[0-9]+$ ]] || [ "$THREADS" -lt 1 ] || [ "$THREADS" -gt 64 ]; }; then
  echo "$0: threads must be 1..64 or auto, got '$THREADS'" >&2; exit 2
fi
if [ -n "$SEED" ] && ! [[ "$SEED" =~ ^[0-9]+$ ]]; then
  echo "$0: seed must be a non-negative integer, got '$SEED'" >&2; exit 2
fi
cd "$(dirname "$0")/.."
case "$SCHEME" in
  ecmp) CFG=configs/scenarios/ns3-alistorage-128h.json ;;
  conweave) CFG=configs/scenarios/ns3-alistorage-128h-conweave.json ;;
  *) echo "usage: $0 [build-dir] [ecmp|conweave] [seed] [threads]" >&2; exit 2 ;;
esac
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
/usr/bin/time -f "%e %M" -o "$OUT/time" "$BUILD/rocefab" sim "$CFG" --out "$OUT/r" -q --threads "$THREADS" ${SEED:+--seed "$SEED"}
read -r WALL KB < "$OUT/time"
python3 - "$OUT/r/summary.json" "$WALL" "$KB" "$SCHEME" "$THREADS" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); wall = float(sys.argv[2]); mib = int(sys.argv[3]) / 1024
scheme = sys.argv[4]; threads = s["sim_events"]["partitions"]
w = s["workload"]; b = w["buckets"]
print(f"{'':34} {'rocefab ' + scheme:>16} {'ns-3 ECMP':>12} {'ns-3 ConWeave':>14}")
print(f"{'wall time (s), ' + str(threads) + ' thread(s)':34} {wall:14.1f} {'367 (best)':>12} {'436 (best)':>14}")
print(f"{'peak memory (MiB)':34} {mib:14.0f} {595:12d} {602:14d}")
print(f"{'events executed':34} {s['events_executed']:14,d} {'70.6 M':>12} {'67.4 M':>14}")
print(f"{'packet-hops per wall second':34} {s['frames_delivered']/wall:14,.0f}")
print(f"{'events per wall second':34} {s['events_executed']/wall:14,.0f} {70.6e6/367:12,.0f}")
ref_wall = 436 if scheme == "conweave" else 367
print(f"{'speed-up vs ns-3 ' + ('ConWeave' if scheme == 'conweave' else 'ECMP'):34} {ref_wall/wall:14.1f}x")
ref_conweave = {"all": (1.440, 1.123, 5.053, 8.761), "lt_bdp": (1.367, None, 3.874, None),
                "ge_bdp": (3.037, None, 9.675, None), "le_4k": (1.304, None, 3.839, None),
                "4k_16k": (1.352, None, 3.916, None), "16k_64k": (1.491, None, 3.699, None),
                "64k_256k": (1.721, None, 3.697, None), "gt_256k": (4.098, None, 10.449, None)}
ref = {"all": (1.812, 1.132, 9.133, 15.640), "lt_bdp": (1.690, None, 7.308, None), "ge_bdp": (4.491, None, 16.277, None),
       "le_4k": (1.652, None, 7.782, None), "4k_16k": (1.675, None, 7.251, None), "16k_64k": (1.801, None, 6.978, None),
       "64k_256k": (1.914, None, 5.087, None), "gt_256k": (6.539, None, 17.512, None)}
if scheme == "conweave":
    ref = ref_conweave
print(f"\nslowdown ({w['counted']} flows starting at or after 5 ms; ns-3: 48,860)")
print(f"{'bucket':10} {'count':>6} {'avg':>7} {'ns-3':>7} {'p99':>7} {'ns-3':>7}")
for k, (ra, _, rp, _) in ref.items():
    x = b[k]
    print(f"{k:10} {x['count']:6d} {x['avg']:7.3f} {ra:7.3f} {x['p99']:7.3f} {rp:7.3f}")
print(f"all: p50 {b['all']['p50']:.3f} (ns-3 {ref['all'][1]}), p99.9 {b['all']['p999']:.3f} (ns-3 {ref['all'][3]})")
pfc = sum(p["pfc"].get("3", {}).get("tx_xoff", 0) + p["pfc"].get("3", {}).get("tx_xon", 0)
          for sw in s["switches"].values() for p in sw["ports"])
cnp = sum(h["rnic"]["cnps_sent"] for h in s["hosts"].values())
cnp_ooo = sum(h["rnic"].get("cnps_sent_out_of_order", 0) for h in s["hosts"].values())
ooo = sum(h["rnic"]["out_of_order"] for h in s["hosts"].values())
ref_pfc, ref_cnp = ("164", "78,673") if scheme == "conweave" else ("6,881", "397,321")
print(f"PFC pause+resume frames sent by switches: {pfc} (ns-3 {ref_pfc} events incl. hosts); CNPs: {cnp} (ns-3 {ref_cnp})")
print(f"data packets out of order at the NICs: {ooo}; CNPs sent for out-of-order arrival: {cnp_ooo}"
      + (" (ns-3: 16)" if scheme == "conweave" else ""))
if scheme == "conweave":
    tx = [sw["conweave"]["tx"] for sw in s["switches"].values() if "conweave" in sw]
    rx = [sw["conweave"]["rx"] for sw in s["switches"].values() if "conweave" in sw]
    print(f"reroutes {sum(t['reroutes'] for t in tx)} (ns-3 13,679); reorder-queue releases "
          f"{sum(r['releases_by_tail'] + r['releases_by_timeout'] for r in rx)}, by TAIL "
          f"{sum(r['releases_by_tail'] for r in rx)} (ns-3 9,909 / 9,901); max queues in use per ToR "
          f"{max(r['max_queues_in_use'] for r in rx)} (ns-3 11); fallbacks {sum(r['fallbacks'] for r in rx)}")
PY
