#!/usr/bin/env bash
# bench/mpi_scaling.sh: the sim runner split over MPI ranks and threads (#19), on one machine.
#
#   bench/mpi_scaling.sh [BUILD] [HOSTS...] [-- CONFIG...]
#
# For each fabric size (default 1024) it runs configs/scenarios/large/leaf-spine-1024h.json with
# HOSTS/32 ToRs (32 hosts per ToR, 16 spines, 100 Gb/s links, 1 us cables, AliStorage2019 RDMA
# flows at 25 % host load for 2 ms,
# 4 ms simulated, DCQCN on; a pool of 524,287 frames: 1,024 hosts hold up to ~260,000 at once,
# the default 131,071 runs out) and runs it once per CONFIG "RANKSxTHREADS" (default: 1x1 1x2 2x1;
# 1xT is one process with --threads T, Rx T is mpirun -np R ... --threads T), one after the
# other. It prints one row per run: hosts, ranks x threads, wall time, the largest resident
# memory of one process, events per wall second, the windows run and the frames handed over
# between partitions at their ends (summary.json sim_events), and per rank the seconds its
# threads spent waiting at window ends (the sum over its threads), and checks that fct.txt and summary.json
# (sim_events aside) are byte-identical to the first configuration's. Figures go to
# docs/experiments.md ("The sim runner on MPI ranks"). Run on an otherwise idle machine: ranks
# and threads beyond the free cores wait for each other at every window.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ -d "$1" ]; then build=$1; shift; fi
sizes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sizes+=("$1"); shift; done
[ $# -gt 0 ] && shift
configs=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1024)
[ ${#configs[@]} -eq 0 ] && configs=(1x1 1x2 2x1)
bin=$PWD/$build/rocefab
work=$(mktemp -d /tmp/rocefab-mpi-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT

printf "%-6s %-7s %8s %8s %9s %10s %8s %10s %s\n" hosts ranksxT setup_s wall_s rss_mib Mevents/s windows crossing \
  "wait_s by rank; same as first"
for hosts in "${sizes[@]}"; do
  tors=$(( hosts / 32 ))
  # The shipped 1,024-host fabric with as many ToRs of 32 hosts as asked.
  sc=$PWD/configs/scenarios/large/leaf-spine-1024h.json
  size=(--set topology.clos.tors=$tors)
  first=""
  for c in "${configs[@]}"; do
    ranks=${c%x*}
    threads=${c#*x}
    out=$work/$hosts-$c
    if [ "$ranks" -eq 1 ]; then
      cmd=("$bin" sim "$sc" "${size[@]}" --threads "$threads" --out "$out")
    else
      cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks"
           "$bin" sim "$sc" "${size[@]}" --threads "$threads" --out "$out")
    fi
    start=$(date +%s.%N)
    /usr/bin/time -v "${cmd[@]}" > "$out.log" 2> "$out.time"
    end=$(date +%s.%N)
    python3 - "$hosts" "$c" "$start" "$end" "$out" "$first" <<'PY'
import json, re, sys
hosts, c, start, end, out, first = sys.argv[1:7]
wall = float(end) - float(start)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(out + ".time").read()).group(1)) / 1024
log = open(out + ".log").read()
summary = json.load(open(out + "/summary.json"))
events = summary["events_executed"]
# Windows run and frames handed over between partitions (threads or ranks) at their ends.
sim_events = summary.get("sim_events", {})
windows = sim_events.get("windows", 0)
crossing = sim_events.get("cross_partition_frames", 0)
setup = float(re.search(r"set up in ([\d.]+) s", log).group(1))
waits = {}
for m in re.finditer(r"^  (?:rank (\d+) )?thread \d+: .* ([\d.]+) s waiting", log, re.M):
    r = int(m.group(1) or 0)
    waits[r] = waits.get(r, 0.0) + float(m.group(2))
same = "-"
if first:
    def load(d):
        s = json.load(open(d + "/summary.json"))
        s.pop("sim_events", None)
        return s, open(d + "/fct.txt").read()
    same = "yes" if load(out) == load(first) else "NO"
w = " ".join(f"{waits[r]:.1f}" for r in sorted(waits)) or "-"
print(f"{hosts:<6} {c:<7} {setup:8.1f} {wall:8.1f} {rss:9.0f} {events / wall / 1e6:10.2f} "
      f"{windows:8d} {crossing:10d} {w}; {same}", flush=True)
PY
    if [ -z "$first" ]; then first=$out; fi
  done
done
