#!/usr/bin/python3
"""ECMP's throughput bound (issue 24; Guo et al., SIGCOMM 2016 §6: 3.0 of a podset's 5 Tb/s).

Runs configs/scenarios/ecmp-bound.json (3-tier Clos at 40G, 2 podsets, every server writing to
its peer in the other podset at line rate) over `--seeds` (each seed gives every switch another
ECMP hash seed) and schemes, and a 2-tier variant with the same 32 servers (8 ToRs x 4, 4 spines;
every server writes to its peer under the next ToR). CONGA and ConWeave run on both (on the
3-tier one the source ToR source-routes the leaf's uplink: docs/load-balancing.md). Per run:
aggregate goodput over [--measure-from, --duration] as a fraction of the capacity (every server's
link, = the bisection both ways), the balls-into-bins range of the same flows on random paths and
max-min on the hashed paths (summary.json ecmp_model), per-uplink utilisation spread, flows per
uplink, PFC XOFF frames, drops, out-of-order packets at the receivers.

Writes <out>/results.json and <out>/results.md and prints the table. About 6 minutes on 2 cores:
  bench/ecmp_bound.py --out results/ecmp-bound
"""
import argparse
import collections
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, "configs/scenarios/ecmp-bound.json")
FABRICS = {
    "3-tier": (["ecmp", "letflow", "drill", "conga", "conweave"], []),
    "2-tier": (["ecmp", "letflow", "drill", "conga", "conweave"],
               ["topology.clos.tiers=2", "topology.clos.tors=8", "topology.clos.spines=4"]),
}


def rocefab():
    built = os.path.join(ROOT, "build", "rocefab")
    return built if os.path.exists(built) else "rocefab"


def run_one(job):
    fabric, scheme, seed, args = job
    out = os.path.join(args.out, f"{fabric}-{scheme}-{seed}")
    sets = FABRICS[fabric][1] + [f"seed={seed}", f"duration={args.duration}",
                                 f"load_balancing.scheme={scheme}"]
    cmd = [rocefab(), "sim", SCENARIO, "--out", out]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    with open(os.path.join(out, "summary.json")) as f:
        return fabric, scheme, seed, analyse(json.load(f), args)


def analyse(s, args):
    frm = float(args.measure_from.rstrip("ms"))
    goodput = 0.0
    for r in s["rdma"]:
        iv = [x["gbps"] for x in r["intervals"] if x["from_ms"] >= frm - 1e-9]
        goodput += statistics.mean(iv)
    m = s["ecmp_model"]
    cap = m["unconstrained_gbps"]
    uplink_gbps, xoff, drops, lossless_drops = [], 0, 0, 0
    for name, sw in s["switches"].items():
        drops += sum(sw["drops"].values()) if isinstance(sw["drops"], dict) else 0
        for tc in ("3", "4"):
            lossless_drops += sum(sw["drops_by_tc"].get(tc, {}).values())
        for p in sw["ports"]:
            xoff += sum(c["tx_xoff"] for c in p["pfc"].values())
            if p.get("peer", "").startswith("spine"):  # the podset's (ToRs', 2-tier) uplinks
                uplink_gbps.append(p["tx_bytes"] * 8 / 1e9)
    dur = float(args.duration.rstrip("ms")) / 1e3
    uplink_gbps = [b / dur for b in uplink_gbps]
    per_uplink = collections.Counter()
    for port, n in m["ecmp_flows_per_port"].items():
        if any(port == p["name"] and p.get("peer", "").startswith("spine")
               for sw in s["switches"].values() for p in sw["ports"]):
            per_uplink[n] += 1
    n_up = len(uplink_gbps)
    per_uplink[0] = n_up - sum(per_uplink.values())
    ooo = sum(h.get("rnic", {}).get("out_of_order", 0) for h in s["hosts"].values())
    return {
        "goodput_gbps": goodput, "capacity_gbps": cap, "fraction": goodput / cap,
        "ecmp_max_min_fraction": m["ecmp_max_min_gbps"] / cap,
        "random_fraction": {k: m["random_hash_gbps"][k] / cap for k in ("p5", "p50", "p95")},
        "uplink_util_min": min(uplink_gbps) / 40, "uplink_util_max": max(uplink_gbps) / 40,
        "uplink_util_cv": statistics.pstdev(uplink_gbps) / statistics.mean(uplink_gbps),
        "flows_per_uplink": dict(sorted(per_uplink.items())),
        "pfc_xoff": xoff, "drops": drops, "lossless_drops": lossless_drops, "out_of_order": ooo,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/ecmp-bound")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--duration", default="40ms")
    ap.add_argument("--measure-from", default="25ms", help="DCQCN has converged by then at 40G")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated fabric/scheme rows to run, "
                    "e.g. 3-tier/conweave,3-tier/conga (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    unknown = only - {f"{fab}/{sch}" for fab, (schemes, _) in FABRICS.items() for sch in schemes}
    if unknown:
        sys.exit(f"ecmp_bound: --only: unknown row(s) {sorted(unknown)}")
    jobs = [(fab, sch, seed, args) for fab, (schemes, _) in FABRICS.items() for sch in schemes
            for seed in args.seeds if not only or f"{fab}/{sch}" in only]
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as ex:
        runs = list(ex.map(run_one, jobs))
    results = collections.defaultdict(dict)
    for fab, sch, seed, r in runs:
        results[f"{fab}/{sch}"][seed] = r
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    lines = ["| fabric/scheme | goodput % of capacity (per seed) | mean | hashed paths max-min % (ECMP) "
             "| random paths p5-p95 % | uplink util min-max (CV) | flows per uplink (ECMP) | PFC XOFF | drops "
             "(lossless) | out of order |", "|" + "---|" * 10]
    for key, per_seed in results.items():
        rs = [per_seed[s] for s in args.seeds]
        fr = [100 * r["fraction"] for r in rs]
        ecmp = key.endswith("/ecmp")
        hist = collections.Counter()
        for r in rs:
            hist.update({int(k): v for k, v in r["flows_per_uplink"].items()})
        lines.append(
            f"| {key} | {' / '.join(f'{x:.0f}' for x in fr)} | {statistics.mean(fr):.1f} | "
            + (" / ".join(f"{100 * r['ecmp_max_min_fraction']:.0f}" for r in rs) if ecmp else "-")
            + f" | {100 * rs[0]['random_fraction']['p5']:.0f}-{100 * rs[0]['random_fraction']['p95']:.0f} | "
            f"{100 * min(r['uplink_util_min'] for r in rs):.0f}-{100 * max(r['uplink_util_max'] for r in rs):.0f} % "
            f"({statistics.mean(r['uplink_util_cv'] for r in rs):.2f}) | "
            + (", ".join(f"{k}: {v}" for k, v in sorted(hist.items())) if ecmp else "-")
            + f" | {sum(r['pfc_xoff'] for r in rs)} | {sum(r['drops'] for r in rs)} "
            f"({sum(r['lossless_drops'] for r in rs)}) | {sum(r['out_of_order'] for r in rs)} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
