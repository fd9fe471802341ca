#!/usr/bin/python3
"""rocefab against the reference ConWeave ns-3 simulator flow by flow, on one committed trace.

Under "compat": "conweave-ns3" every flow has the reference's UDP ports and takes the
reference's ECMP path (switch/ecmp.h), so a flow's FCT here and there can be compared one to
one: the flows are joined on (src, dst, sport, dport). Prints, per size bucket and for flows
under one ToR / across ToRs, how many flows there are, the median and 10th/90th percentile of
rocefab's FCT over the reference's, and the share within 1 % and 5 %; then the flows that differ
most. Scored as bench/fidelity.py: flows starting at or after the trace's measure_from.

Usage: bench/fidelity/per_flow.py TRACE [--scheme ecmp|conweave] [--build build] [--seed N]
                                  [--set KEY=VALUE ...] [--worst 10] [--keep DIR]
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from fidelity import parse_ns, scenario_for  # noqa: E402
from ns3_ideal_rule import BUCKETS, in_bucket  # noqa: E402

REFERENCE_START_NS = 2_000_000_000  # the reference's flows start at 2 s
HOSTS_PER_TOR = 16  # the reference's leaf_spine_128_100G_OS2 and fat_k8 (4 per edge: see --hosts-per-tor)


def read_fct(lines, offset_ns):
    """(src, dst, sport, dport) -> (size, start_ns, fct_ns) of an 8-column FCT file."""
    out = {}
    for n, line in enumerate(lines, 1):
        p = line.split()
        if len(p) != 8:
            sys.exit(f"per_flow: FCT line {n}: expected 8 columns, got {len(p)}")
        key = tuple(int(x) for x in p[:4])
        out[key] = (int(p[4]), int(p[5]) - offset_ns, int(p[6]))
    return out


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def row(name, ratios):
    if not ratios:
        return f"| {name} | 0 | | | | | |"
    within = lambda t: 100.0 * sum(abs(r - 1) <= t for r in ratios) / len(ratios)  # noqa: E731
    return (f"| {name} | {len(ratios):,} | {pct(ratios, 0.5):.3f} | {pct(ratios, 0.1):.3f} | "
            f"{pct(ratios, 0.9):.3f} | {within(0.01):.1f} % | {within(0.05):.1f} % |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--scheme", default="ecmp", choices=["ecmp", "conweave"])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", default="auto")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--worst", type=int, default=10)
    ap.add_argument("--hosts-per-tor", type=int, default=HOSTS_PER_TOR)
    ap.add_argument("--keep", help="keep rocefab's output in this directory")
    a = ap.parse_args()
    traces = {t["name"]: t for t in json.load(open(os.path.join(HERE, "traces.json")))["traces"]}
    if a.trace not in traces:
        sys.exit(f"per_flow: no trace {a.trace!r} in traces.json (have {', '.join(traces)})")
    trace = traces[a.trace]
    tmp = a.keep or tempfile.mkdtemp(prefix="per_flow-")
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, "scenario.json")
    json.dump(scenario_for(trace, a.scheme, "conweave-ns3"), open(path, "w"))
    out = os.path.join(tmp, "out")
    cmd = [os.path.join(a.build, "rocefab"), "sim", path, "--out", out, "-q", "--threads",
           a.threads]
    for kv in a.set:
        cmd += ["--set", kv]
    if a.seed is not None:
        cmd += ["--seed", str(a.seed)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"per_flow: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    mine = read_fct(open(os.path.join(out, "fct.txt")).read().splitlines(), 0)
    with lzma.open(os.path.join(HERE, trace["reference"][a.scheme]["fct"]), "rt") as f:
        ref = read_fct(f.read().splitlines(), REFERENCE_START_NS)
    since = parse_ns(trace["measure_from"])
    joined = [(k, ref[k], mine[k]) for k in ref if k in mine and ref[k][1] >= since]
    missing = sum(1 for k in ref if k not in mine and ref[k][1] >= since)
    print(f"{a.trace} {a.scheme}: {len(joined):,} flows joined on (src, dst, sport, dport), "
          f"{missing} of the reference's not found here")
    print("\n| flows | count | median rocefab / ns-3 FCT | p10 | p90 | within 1 % | within 5 % |")
    print("|---|---|---|---|---|---|---|")
    ratio = lambda j: j[2][2] / j[1][2]  # noqa: E731
    intra = lambda j: j[0][0] // a.hosts_per_tor == j[0][1] // a.hosts_per_tor  # noqa: E731
    print(row("all", [ratio(j) for j in joined]))
    print(row("under one ToR", [ratio(j) for j in joined if intra(j)]))
    print(row("across ToRs", [ratio(j) for j in joined if not intra(j)]))
    for name, lo, hi in BUCKETS:
        if name == "all":
            continue
        print(row(name, [ratio(j) for j in joined if in_bucket(name, lo, hi, j[1][0])]))
    worst = sorted(joined, key=lambda j: -abs(ratio(j) - 1))[: a.worst]
    print("\n| src | dst | sport | dport | size | start (ns) | ns-3 FCT (ns) | rocefab FCT (ns) |")
    print("|---|---|---|---|---|---|---|---|")
    for k, rv, mv in worst:
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {rv[0]:,} | {rv[1]:,} | {rv[2]:,} | "
              f"{mv[2]:,} |")


if __name__ == "__main__":
    main()
