#!/usr/bin/python3
"""Load-balancing comparison on the ConWeave paper's fabric (issue 6).

128 hosts, 8 ToRs x 16 hosts, 8 spines, 100 Gb/s everywhere (2:1 oversubscribed at the ToRs),
lossless with PFC, ECN and DCQCN: the settings of configs/scenarios/ns3-alistorage-128h.json,
whose trace traffic is replaced by Poisson flows between random host pairs for `--window` of
simulated time. `--loads` are network loads as the ConWeave paper states them: its `run.py`
divides the requested load by the 2:1 oversubscription, so 50 % network load is 25 % of each
host's link rate (= 50 % of the ToR uplinks; the anchor trace is this case). Slowdown statistics count flows starting at or after
`--measure-from`; the run lasts `--duration` so that the flows can finish (unfinished flows are
reported). Every (workload, load, scheme) is one `rocefab sim` run; `--jobs` run at once.

Writes <out>/results.json, <out>/results.md (tables) and <out>/slowdown.png, and prints the
tables. Example (about 10 minutes on 2 cores with --jobs 2):
  bench/lb_compare.py --out results/lb-compare
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMES = ["ecmp", "letflow", "conga", "drill", "conweave"]
BUCKETS = ["all", "lt_bdp", "ge_bdp", "le_4k", "4k_16k", "16k_64k", "64k_256k", "gt_256k"]


OVERSUBSCRIPTION = 2.0


def scenario(workload, load, scheme, args):
    with open(os.path.join(ROOT, "configs/scenarios/ns3-alistorage-128h.json")) as f:
        s = json.load(f)
    s["name"] = f"lb-{workload}-{int(load * 100)}-{scheme}"
    s["description"] = (f"{scheme} on the ConWeave paper's 128-host 100G leaf-spine, {workload} Poisson flows "
                        f"at {load:.0%} network load ({load / OVERSUBSCRIPTION:.0%} host load) for {args.window} "
                        f"(bench/lb_compare.py)")
    s["seed"] = args.seed
    s["duration"] = args.duration
    s["traffic"] = [{"kind": "workload", "pattern": "poisson", "cdf": workload, "load": load / OVERSUBSCRIPTION,
                     "from": "all", "to": "all", "start": "0s", "duration": args.window,
                     "measure_from": args.measure_from}]
    s["load_balancing"] = {"scheme": scheme}
    assert s.get("neighbors") == "static"  # as the reference: no ARP warm-up drops
    return s


def run_one(job):
    workload, load, scheme, args = job
    out = os.path.join(args.out, f"{workload}-{int(load * 100)}-{scheme}")
    os.makedirs(out, exist_ok=True)
    cfg = os.path.join(out, "scenario.json")
    with open(cfg, "w") as f:
        json.dump(scenario(workload, load, scheme, args), f, indent=1)
    timef = os.path.join(out, "time.txt")
    t0 = time.time()
    sets = [a for kv in args.set for a in ("--set", kv)]
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", timef, args.bin, "sim", cfg, "--out",
                        os.path.join(out, "run"), "-q"] + sets, capture_output=True, text=True)
    if r.returncode != 0:
        return {"workload": workload, "load": load, "scheme": scheme, "error": r.stderr.strip()[-500:]}
    wall, kb = open(timef).read().split()[-2:]
    s = json.load(open(os.path.join(out, "run", "summary.json")))
    w = s["workload"]
    hosts = s["hosts"].values()
    res = {
        "workload": workload, "load": load, "scheme": scheme,
        "wall_s": float(wall), "peak_mib": int(kb) / 1024, "events": s["events_executed"],
        "frames_delivered": s["frames_delivered"],
        "flows": w["flows"], "finished": w["finished"], "counted": w["counted"],
        "buckets": w["buckets"],
        "out_of_order": sum(h["rnic"]["out_of_order"] for h in hosts),
        "cnps": sum(h["rnic"]["cnps_sent"] for h in hosts),
        "timeouts": sum(h["rnic"]["timeouts"] for h in hosts),
        "lossless_drops": sum(sw.get("drops_total", 0) for sw in s["switches"].values()),
        "pfc_frames": sum(p["pfc"].get("3", {}).get("tx_xoff", 0) for sw in s["switches"].values()
                          for p in sw["ports"]),
    }
    # ToRs only: a spine or leaf that forwards source-routed frames has a "conweave" block too.
    cw = [sw["conweave"] for sw in s["switches"].values() if "tx" in sw.get("conweave", {})]
    if cw:
        res["reroutes"] = sum(c["tx"]["reroutes"] for c in cw)
        res["held"] = sum(c["rx"]["held"] for c in cw)
        res["fallbacks"] = sum(c["rx"]["fallbacks"] for c in cw)
    cg = [sw["conga"] for sw in s["switches"].values() if "conga" in sw and "flowlets" in sw["conga"]]
    if cg:
        res["path_changes"] = sum(c["path_changes"] for c in cg)
    lb = [sw["load_balancing"] for sw in s["switches"].values() if "load_balancing" in sw]
    if lb and scheme in ("letflow", "drill"):
        res["path_changes"] = sum(x.get("path_changes", 0) for x in lb)
    print(f"  done {workload} {load:.0%} {scheme}: {float(wall):.0f} s, avg {w['buckets']['all']['avg']:.3f} "
          f"p99 {w['buckets']['all']['p99']:.3f}", flush=True)
    return res


def tables(results):
    lines = []
    keys = sorted({(r["workload"], r["load"]) for r in results})
    for wl, load in keys:
        rows = [r for r in results if r["workload"] == wl and r["load"] == load]
        rows.sort(key=lambda r: SCHEMES.index(r["scheme"]))
        ecmp = next((r for r in rows if r["scheme"] == "ecmp" and "error" not in r), None)
        lines.append(f"\n### {wl}, {load:.0%} network load ({load / OVERSUBSCRIPTION:.0%} host load)\n")
        lines.append("| scheme | avg | p50 | p99 | p99.9 | avg vs ECMP | p99 vs ECMP | <BDP avg/p99 | >=BDP avg/p99 "
                     "| flows counted (finished/all) | OoO at NICs | CNPs | reroutes / path changes | wall s |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "error" in r:
                err = r["error"].replace("|", "/").replace("\n", " ")
                lines.append(f"| {r['scheme']} | error: {err} |" + " |" * 12)
                continue
            a = r["buckets"]["all"]
            rel = lambda k: (f"{(a[k] / ecmp['buckets']['all'][k] - 1) * 100:+.1f} %" if ecmp else "")
            lt, ge = r["buckets"]["lt_bdp"], r["buckets"]["ge_bdp"]
            moves = r.get("reroutes", r.get("path_changes", ""))
            lines.append(f"| {r['scheme']} | {a['avg']:.3f} | {a['p50']:.3f} | {a['p99']:.3f} | {a['p999']:.3f} "
                         f"| {rel('avg')} | {rel('p99')} | {lt['avg']:.2f}/{lt['p99']:.2f} | {ge['avg']:.2f}/{ge['p99']:.2f} "
                         f"| {r['counted']} ({r['finished']}/{r['flows']}) | {r['out_of_order']:,} | {r['cnps']:,} "
                         f"| {moves if moves == '' else f'{moves:,}'} | {r['wall_s']:.0f} |")
    return "\n".join(lines)


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    keys = sorted({(r["workload"], r["load"]) for r in results})
    fig, axes = plt.subplots(2, len(keys), figsize=(4 * len(keys), 6), squeeze=False)
    for i, (wl, load) in enumerate(keys):
        rows = sorted([r for r in results if r["workload"] == wl and r["load"] == load and "error" not in r],
                      key=lambda r: SCHEMES.index(r["scheme"]))
        if not rows:
            continue
        names = [r["scheme"] for r in rows]
        for j, stat in enumerate(["avg", "p99"]):
            ax = axes[j][i]
            vals = [r["buckets"]["all"][stat] for r in rows]
            bars = ax.bar(names, vals, color=["#cc6677" if n == "drill" else "#4477aa" for n in names])
            for b, v in zip(bars, vals):
                ax.annotate(f"{v:.2f}" if v < 100 else f"{v:.0f}", (b.get_x() + b.get_width() / 2, v),
                            ha="center", va="bottom", fontsize=7)
            ax.set_yscale("log")  # DRILL's go-back-N collapse is 10-100x the others
            ax.set_ylim(bottom=1, top=max(vals) * 2.0)  # slowdown is floored at 1; room for the labels
            ax.set_title(f"{wl} {load:.0%} load: {stat} slowdown", fontsize=9)
            ax.tick_params(axis="x", labelsize=8, rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/rocefab"), help="rocefab binary (default: %(default)s)")
    ap.add_argument("--out", default=os.path.join(ROOT, "results/lb-compare"),
                    help="folder for the runs, results.json/.md and slowdown.png (default: %(default)s)")
    ap.add_argument("--schemes", default=",".join(SCHEMES), help="comma-separated (default: %(default)s)")
    ap.add_argument("--workloads", default="AliStorage2019,WebSearch2009",
                    help="CDF names from configs/workloads, comma-separated (default: %(default)s)")
    ap.add_argument("--loads", default="0.5,0.8",
                    help="network loads as the ConWeave paper states them, comma-separated (default: %(default)s)")
    ap.add_argument("--window", default="10ms", help="flows start during [0, window) (default: %(default)s)")
    ap.add_argument("--measure-from", default="3ms", help="count flows starting at or after this (default: %(default)s)")
    ap.add_argument("--duration", default="60ms",
                    help="simulated time; flows finish after the window (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="scenario seed (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: %(default)s)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="scenario key for every run (rocefab sim --set), repeatable, e.g. "
                         "buffer.lossless_over_limit=shared")
    ap.add_argument("--tables-only", action="store_true",
                    help="rewrite results.md and slowdown.png from <out>/results.json without running")
    args = ap.parse_args()
    if args.tables_only:
        results = json.load(open(os.path.join(args.out, "results.json")))["results"]
        md = tables(results)
        with open(os.path.join(args.out, "results.md"), "w") as f:
            f.write(md + "\n")
        print(md)
        plot(results, os.path.join(args.out, "slowdown.png"))
        return 0
    for s in args.schemes.split(","):
        if s not in SCHEMES:
            sys.exit(f"--schemes: unknown scheme {s!r} (one of {', '.join(SCHEMES)})")
    for w in args.workloads.split(","):
        if not os.path.exists(os.path.join(ROOT, "configs/workloads", w + ".txt")):
            sys.exit(f"--workloads: no configs/workloads/{w}.txt")
    try:
        loads = [float(x) for x in args.loads.split(",")]
    except ValueError:
        sys.exit(f"--loads: expected comma-separated numbers, got {args.loads!r}")
    for x in loads:
        if not 0 < x <= OVERSUBSCRIPTION:
            sys.exit(f"--loads: {x} is outside (0, {OVERSUBSCRIPTION:g}] (network load; host load = load / "
                     f"{OVERSUBSCRIPTION:g} must stay <= 1)")
    if args.jobs < 1:
        sys.exit("--jobs: must be at least 1")
    for name in ("window", "measure_from", "duration"):
        v = getattr(args, name)
        if not re.fullmatch(r"[0-9.]+(ps|ns|us|ms|s)", v) or float(re.match(r"[0-9.]+", v).group()) <= 0 and name != "measure_from":
            sys.exit(f"--{name.replace('_', '-')}: expected a positive duration like 10ms, got {v!r}")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} not found: build first (scripts/build.sh)")
    os.makedirs(args.out, exist_ok=True)
    jobs = [(wl, ld, sc, args) for wl in args.workloads.split(",") for ld in loads
            for sc in args.schemes.split(",")]
    print(f"{len(jobs)} runs, {args.jobs} at a time, results in {args.out}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        results = list(ex.map(run_one, jobs))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"args": {k: v for k, v in vars(args).items()}, "results": results}, f, indent=1)
    md = tables(results)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    if plot(results, os.path.join(args.out, "slowdown.png")):
        print(f"\nplot: {os.path.join(args.out, 'slowdown.png')}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
