#!/usr/bin/env bash
# rocefab's sim runner on the reference ConWeave ns-3 anchor trace (shared/data/anchor-ns3:
# 97,984 AliStorage flows, 128 hosts, 100 Gb/s leaf-spine), next to the reference's own figures on
# this machine class. Prints wall time, peak memory, events and packet-hops per wall second, and
# the slowdown table. Usage: bench/ns3_anchor.sh [build-dir] [ecmp|conweave] [seed] [threads]
# (seed: overrides the scenario's seed 1, which drives ECMP hashing, ECN marking and DCQCN; the
# seed-to-seed spread of the slowdowns is in docs/experiments.md. threads: 1..64 or auto, the
# default: one per CPU, at most one per ToR; results are identical for every thread count)
#
# Side by side: with NS3_REF=/path/to/conweave-ns3 (a checkout built as in
# shared/reference/reference-simulator.md), the script then runs the reference on the same trace
# and scheme, one run after the other on this machine, and prints its wall time (run.py end to
# end, and the simulator's own CPU seconds from its log), its all-flow slowdown against the
# stored figures (the run is deterministic: they must agree) and the measured speed-up, instead of
# the stored wall times. The reference takes 3-11 min per run here. NS3_PYTHON2 (default: pyenv's
# 2.7.18) is the Python 2 its waf needs.
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
print(f"{'speed-up vs ns-3 ' + ('ConWeave' if scheme == 'conweave' else 'ECMP') + ' (stored)':34} {ref_wall/wall:14.1f}x")
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

[ -n "${NS3_REF:-}" ] || exit 0
# ---- The reference itself, now, on this machine --------------------------------------------
REF=$(cd "$NS3_REF" && pwd)
[ -x "$REF/waf" ] && [ -f "$REF/run.py" ] || { echo "$0: NS3_REF=$NS3_REF is not a conweave-ns3 checkout" >&2; exit 2; }
[ -d "$REF/build" ] || { echo "$0: $REF is not built (./waf build; see reference-simulator.md)" >&2; exit 2; }
PY2=${NS3_PYTHON2:-$HOME/.pyenv/versions/2.7.18/bin/python2.7}
[ -x "$PY2" ] || { echo "$0: no Python 2 at $PY2 (set NS3_PYTHON2)" >&2; exit 2; }
mkdir -p "$OUT/pybin"
ln -sf "$PY2" "$OUT/pybin/python"; ln -sf "$PY2" "$OUT/pybin/python2"; ln -sf /usr/bin/python3 "$OUT/pybin/python3"
# run.py reads the trace from config/ under the name it derives from its arguments.
TRACE="$REF/config/L_25.00_CDF_AliStorage2019_N_128_T_10ms_B_100_flow.txt"
xz -dc ../shared/data/anchor-ns3/flows_AliStorage2019_128h_hostload25_10ms_seed1.txt.xz > "$OUT/trace"
if ! cmp -s "$OUT/trace" "$TRACE" 2>/dev/null; then cp "$OUT/trace" "$TRACE"; fi
LB=$([ "$SCHEME" = conweave ] && echo conweave || echo fecmp)
echo
echo "reference: run.py --lb $LB on the same trace in $REF (minutes)..."
# run.py seeds its output-folder id with random.seed(datetime.now()), a TypeError since Python
# 3.11: the wrapper seeds with the time as a number; run.py itself is run unchanged.
( cd "$REF" && PATH="$OUT/pybin:$PATH" /usr/bin/time -f "%e %M" -o "$OUT/ref_time" python3 -c '
import random, runpy, sys, time
seed = random.seed
random.seed = lambda a=None, version=2: seed(time.time() if a is not None else None, version)
sys.argv = ["run.py", "--lb", sys.argv[1], "--pfc", "1", "--irn", "0", "--simul_time", "0.01",
            "--netload", "50", "--topo", "leaf_spine_128_100G_OS2"]
runpy.run_path("run.py", run_name="__main__")' "$LB" > "$OUT/ref_stdout" 2>&1 ) || {
  echo "$0: the reference failed; its output:" >&2; tail -20 "$OUT/ref_stdout" >&2; exit 1; }
DIR=$(grep -o "$REF/mix/output/[0-9][0-9]*" "$OUT/ref_stdout" | head -1)
read -r RWALL RKB < "$OUT/ref_time"
python3 - "$DIR" "$RWALL" "$RKB" "$WALL" "$SCHEME" <<'PY'
import glob, os, sys
d, rwall, rkb, wall, scheme = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
cid = os.path.basename(d)
log = open(os.path.join(d, "config.log")).read().split()
cpu = float(log[-1]) if log else float("nan")  # the simulator prints its clock() seconds last
sd = []
for line in open(glob.glob(os.path.join(d, "*_out_fct.txt"))[0]):
    f = line.split()
    if len(f) >= 8 and int(f[5]) >= 2_005_000_000:
        sd.append(max(1.0, int(f[6]) / int(f[7])))
avg = sum(sd) / len(sd)
stored = 1.440 if scheme == "conweave" else 1.812
print(f"{'reference wall time (run.py), s':34} {rwall:14.1f}")
print(f"{'reference simulator CPU time, s':34} {cpu:14.1f}")
print(f"{'reference peak memory (MiB)':34} {rkb / 1024:14.0f}")
print(f"{'reference all-flow avg slowdown':34} {avg:14.3f}   (stored {stored}; {len(sd)} flows)"
      + ("" if abs(avg - stored) < 0.0015 else "  DIFFERS from the stored run"))
print(f"{'speed-up, side by side':34} {cpu / wall:14.1f}x  (simulator CPU time / rocefab wall time)")
print(f"{'':34} {rwall / wall:14.1f}x  (run.py wall time / rocefab wall time)")
print(f"outputs: {d}")
PY
