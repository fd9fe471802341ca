#!/usr/bin/python3
"""rocefab against the reference ConWeave ns-3 simulator on every committed trace.

For each trace of bench/fidelity/traces.json (its flows and the reference's outputs, collected by
bench/fidelity/collect_reference.py) and each scheme (ECMP, ConWeave), runs rocefab's sim runner
on the reference's setup (configs/scenarios/ns3-alistorage-128h[-conweave].json with the trace,
its warm-up and `"compat": "conweave-ns3"`, or the defaults with --compat none; a trace with a
"topology" key runs on that fabric instead of the 128-host leaf-spine: bench/fidelity/topologies/,
the reference's topology files converted by scripts/ns3_to_rocefab.py) and prints the
slowdown per bucket (8 buckets, avg and p99) next to the reference's, with the relative
differences; then PFC frames and CNPs, and whether ConWeave beats ECMP where the reference says
it does. Both sides are scored by the same rule: flows starting at or after the trace's
measure_from, slowdown = FCT / the file's own standalone FCT, floored at 1, nearest-rank p99,
buckets as docs/results.md. Writes OUT.json and OUT.md.

Usage: bench/fidelity.py [--build build] [--traces a,b] [--schemes ecmp,conweave]
                         [--compat conweave-ns3|none] [--threads auto] [--seed N]
                         [--set KEY=VALUE ...]
                         [--out docs/figures/fidelity-results]
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from ns3_ideal_rule import BUCKETS, in_bucket, p99  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "fidelity"))
import pfc_by_link  # noqa: E402

# The reference's own topology file, for reading its PFC log (pfc_by_link.py): the 128-host
# leaf-spine unless a trace names another ("ns3_topology").
NS3_TOPOLOGY = "topologies/leaf_spine_128_100G_OS2.txt"

TEMPLATES = {"ecmp": "ns3-alistorage-128h.json", "conweave": "ns3-alistorage-128h-conweave.json"}
AVG_TOL, P99_TOL = 0.05, 0.10  # the bar: avg within 5 %, p99 within 10 %


def parse_ns(text):
    for unit, f in (("ms", 1e6), ("us", 1e3), ("ns", 1), ("s", 1e9)):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * f)
    sys.exit(f"fidelity: bad duration {text!r}")


def slowdowns(lines, start_offset_ns, measure_from_ns):
    """Per bucket, the slowdowns of the flows in an 8-column FCT file."""
    out = {b[0]: [] for b in BUCKETS}
    for n, line in enumerate(lines, 1):
        p = line.split()
        if len(p) != 8:
            sys.exit(f"fidelity: FCT line {n}: expected 8 columns, got {len(p)}")
        size, start, fct, ideal = int(p[4]), int(p[5]) - start_offset_ns, int(p[6]), int(p[7])
        if start < measure_from_ns:
            continue
        s = max(1.0, fct / ideal)
        for name, lo, hi in BUCKETS:
            if in_bucket(name, lo, hi, size):
                out[name].append(s)
    return {k: {"count": len(v), "avg": sum(v) / len(v) if v else None, "p99": p99(v) if v else None}
            for k, v in out.items()}


def scenario_for(trace, scheme, compat):
    d = json.load(open(os.path.join(ROOT, "configs", "scenarios", TEMPLATES[scheme])))
    if "topology" in trace:  # another fabric of the reference's, converted by ns3_to_rocefab.py
        d["topology"] = json.load(open(os.path.join(HERE, "fidelity", trace["topology"])))
    t = d["traffic"][0]
    t["file"] = os.path.join(HERE, "fidelity", trace["flows"])
    t["measure_from"] = trace["measure_from"]
    d["name"] = f"fidelity-{trace['name']}-{scheme}"
    if compat != "none":
        d["compat"] = compat
        d["buffer"].pop("xon_offset", None)  # the compat model's XON offset
    return d


def run_rocefab(a, trace, scheme, tmp):
    path = os.path.join(tmp, f"{trace['name']}-{scheme}.json")
    json.dump(scenario_for(trace, scheme, a.compat), open(path, "w"))
    out = os.path.join(tmp, f"{trace['name']}-{scheme}")
    cmd = [os.path.join(a.build, "rocefab"), "sim", path, "--out", out, "-q", "--threads", a.threads]
    for kv in a.set:
        cmd += ["--set", kv]
    if a.seed is not None:
        cmd += ["--seed", str(a.seed)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"fidelity: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    wall = time.time() - t0
    s = json.load(open(os.path.join(out, "summary.json")))
    lines = open(os.path.join(out, "fct.txt")).read().splitlines()
    pfc = sum(p["pfc"].get("3", {}).get("tx_xoff", 0) + p["pfc"].get("3", {}).get("tx_xon", 0)
              for sw in s["switches"].values() for p in sw["ports"])
    drops = sum(sw.get("drops_total", 0) for sw in s["switches"].values())
    res = {"wall_s": round(wall, 1), "flows": len(lines),
           "flows_in_trace": s["workload"].get("flows", len(lines)),
           "pfc_frames": pfc, "switch_drops": drops,
           "cnps": sum(h["rnic"]["cnps_sent"] for h in s["hosts"].values()),
           "out_of_order": sum(h["rnic"]["out_of_order"] for h in s["hosts"].values()),
           "buckets": slowdowns(lines, 0, parse_ns(trace["measure_from"])),
           "pfc_by_direction": pfc_by_link.by_direction(
               pfc_by_link.count_rocefab(os.path.join(out, "summary.json"), 3))}
    if scheme == "conweave":
        rx = [sw["conweave"]["rx"] for sw in s["switches"].values() if "rx" in sw.get("conweave", {})]
        tx = [sw["conweave"]["tx"] for sw in s["switches"].values() if "tx" in sw.get("conweave", {})]
        res["reorder_releases_by_timeout"] = sum(r["releases_by_timeout"] for r in rx)
        # The decisions the reference counts too (collect_reference.py CONWEAVE_COUNTERS).
        res["conweave"] = {
            "rtt_replies": sum(r["rtt_replies"] for r in rx),
            "timely_replies": sum(t["timely_replies"] for t in tx),
            "clears": sum(r["clears"] for r in rx),
            "notifies": sum(r["notifies"] for r in rx),
            "reroutes": sum(t["reroutes"] for t in tx),
            "held": sum(r["held"] for r in rx),
            "reorder_releases": sum(r["releases_by_tail"] + r["releases_by_timeout"] +
                                    r["releases_by_new_epoch"] for r in rx),
            "releases_by_tail": sum(r["releases_by_tail"] for r in rx),
            "releases_by_timeout": sum(r["releases_by_timeout"] for r in rx)}
    return res


def reference(trace, scheme):
    r = trace["reference"][scheme]
    with lzma.open(os.path.join(HERE, "fidelity", r["fct"]), "rt") as f:
        lines = f.read().splitlines()
    by_direction = None
    if "pfc_log" in r:  # the reference's *_out_pfc.txt, committed (collected by hand)
        peer, kind, name = pfc_by_link.reference_links(
            os.path.join(HERE, "fidelity", trace.get("ns3_topology", NS3_TOPOLOGY)))
        by_direction = pfc_by_link.by_direction(pfc_by_link.count_reference(
            os.path.join(HERE, "fidelity", r["pfc_log"]), peer, kind, name))
    return {"flows": len(lines), "pfc_frames": sum(r["pfc_frames_received"].values()),
            "pfc_by_direction": by_direction,
            "cnps": r["cnps"]["total"], "cnps_out_of_order": r["cnps"]["by_out_of_order"],
            "wall_s": r.get("wall_s"), "conweave": r.get("conweave"),
            "buckets": slowdowns(lines, 2_000_000_000, parse_ns(trace["measure_from"]))}


def rel(x, y):
    return None if x is None or not y else x / y - 1


def table(trace, scheme, ours, ref):
    rows = [f"### {trace['name']} {scheme} ({trace['workload']}, host load "
            f"{trace['host_load']:.0%}, {trace['flow_count']:,} flows in {trace['window']}, "
            f"counted from {trace['measure_from']})", "",
            "| bucket | flows | rocefab avg | ns-3 avg | diff | rocefab p99 | ns-3 p99 | diff |",
            "|---|---|---|---|---|---|---|---|"]
    misses = []
    for name, _, _ in BUCKETS:
        o, r = ours["buckets"][name], ref["buckets"][name]
        if not r["count"]:
            continue
        da, dp = rel(o["avg"], r["avg"]), rel(o["p99"], r["p99"])
        ok_a, ok_p = abs(da) <= AVG_TOL, abs(dp) <= P99_TOL
        if not ok_a:
            misses.append(f"{name} avg {da:+.1%}")
        if not ok_p:
            misses.append(f"{name} p99 {dp:+.1%}")
        rows.append(f"| {name} | {r['count']:,} | {o['avg']:.3f} | {r['avg']:.3f} | "
                    f"{da:+.1%}{'' if ok_a else ' ✗'} | {o['p99']:.2f} | {r['p99']:.2f} | "
                    f"{dp:+.1%}{'' if ok_p else ' ✗'} |")
    rows += ["", f"PFC frames: rocefab {ours['pfc_frames']:,} sent by switches, ns-3 "
             f"{ref['pfc_frames']:,} received (pause + resume). CNPs: rocefab {ours['cnps']:,}, "
             f"ns-3 {ref['cnps']:,} ({rel(ours['cnps'], ref['cnps']):+.0%}). Packets out of order "
             f"at the NICs: {ours['out_of_order']:,}; switch drops {ours['switch_drops']:,}. "
             f"Wall time: rocefab {ours['wall_s']} s, ns-3 {ref['wall_s']} s (its run, niced, "
             "beside another).", ""]
    if ref.get("pfc_by_direction"):
        # Where the reference's PFC log is committed: who paused whom (pfc_by_link.py).
        rows += ["| PFC by direction | ns-3 pause / resume | rocefab XOFF / XON | diff |",
                 "|---|---|---|---|"]
        r_dir, o_dir = ref["pfc_by_direction"], ours["pfc_by_direction"]
        for k in sorted(set(r_dir) | set(o_dir)):
            r = r_dir.get(k, {"pause": 0, "resume": 0})
            o = o_dir.get(k, {"pause": 0, "resume": 0})
            d = rel(o["pause"] + o["resume"], r["pause"] + r["resume"])
            rows.append(f"| {k} | {r['pause']:,} / {r['resume']:,} | {o['pause']:,} / "
                        f"{o['resume']:,} | {'-' if d is None else f'{d:+.1%}'} |")
        rows.append("")
    if ours.get("conweave") and ref.get("conweave"):
        # Side by side where the reference's config.log has its counters. Its "Rerouting" also
        # counts a TAIL whose new path is the old one; ours counts path changes only.
        names = [("rtt_replies", "rtt_replies"), ("timely_replies", "timely_replies"),
                 ("clears", "clears"), ("notifies", "notifies"),
                 ("reroutes", "reroutes_incl_same_path"), ("held", "held"),
                 ("reorder_releases", "reorder_releases"),
                 ("releases_by_tail", "releases_by_tail"),
                 ("releases_by_timeout", "releases_by_timeout")]
        rows += ["| ConWeave decision | rocefab | ns-3 | diff |", "|---|---|---|---|"]
        for o, r in names:
            a, b = ours["conweave"][o], ref["conweave"].get(r)
            if b is not None:
                d = rel(a, b)
                rows.append(f"| {o} | {a:,} | {b:,} | {'' if d is None else f'{d:+.1%}'} |")
        rows.append("")
    return rows, misses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--traces", default="")
    ap.add_argument("--schemes", default="ecmp,conweave")
    ap.add_argument("--compat", default="conweave-ns3", choices=["conweave-ns3", "none"])
    ap.add_argument("--threads", default="auto")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a scenario override for every run (rocefab sim --set), e.g. an experiment")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "figures", "fidelity-results"))
    a = ap.parse_args()
    manifest = json.load(open(os.path.join(HERE, "fidelity", "traces.json")))
    traces = manifest["traces"]
    if a.traces:
        want = a.traces.split(",")
        unknown = set(want) - {t["name"] for t in traces}
        if unknown:
            sys.exit(f"fidelity: unknown trace(s) {sorted(unknown)}; committed: "
                     f"{[t['name'] for t in traces]}")
        traces = [t for t in traces if t["name"] in want]
    schemes = a.schemes.split(",")
    if set(schemes) - set(TEMPLATES):
        sys.exit("fidelity: --schemes takes ecmp and/or conweave")
    md = [f"# rocefab vs the reference ConWeave ns-3 simulator (compat: {a.compat})", "",
          f"Reference: {manifest['simulator']} (a trace with a topology runs on that fabric: "
          f"{', '.join(sorted({t['topology'] for t in traces if 'topology' in t})) or 'none here'}"
          f"). Command: `bench/fidelity.py --compat {a.compat}"
          f"{' --traces ' + a.traces if a.traces else ''}`.",
          f"Marks ✗: outside ±{AVG_TOL:.0%} (avg) or ±{P99_TOL:.0%} (p99).", ""]
    results, all_misses = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for t in traces:
            per = {}
            for scheme in schemes:
                ours, ref = run_rocefab(a, t, scheme, tmp), reference(t, scheme)
                if ours["flows"] != ref["flows"]:
                    sys.exit(f"fidelity: {t['name']} {scheme}: rocefab finished {ours['flows']} "
                             f"flows, the reference {ref['flows']}")
                rows, misses = table(t, scheme, ours, ref)
                md += rows
                print("\n".join(rows), flush=True)
                all_misses += [f"{t['name']} {scheme}: {m}" for m in misses]
                per[scheme] = {"rocefab": ours, "ns3": ref, "misses": misses}
            if len(per) == 2:
                wrong = [b[0] for b in BUCKETS
                         if per["conweave"]["ns3"]["buckets"][b[0]]["count"]
                         and per["conweave"]["ns3"]["buckets"][b[0]]["avg"]
                         < per["ecmp"]["ns3"]["buckets"][b[0]]["avg"]
                         and not per["conweave"]["rocefab"]["buckets"][b[0]]["avg"]
                         < per["ecmp"]["rocefab"]["buckets"][b[0]]["avg"]]
                line = (f"ConWeave vs ECMP ({t['name']}): " +
                        ("better in every bucket where the reference says so"
                         if not wrong else "NOT better where the reference is: " + ", ".join(wrong)))
                md += [line, ""]
                print(line + "\n")
                per["conweave_not_better"] = wrong
            results[t["name"]] = per
    md += ["## Outside the bar", ""] + ([f"- {m}" for m in all_misses] or ["- none"])
    json.dump({"compat": a.compat, "traces": results}, open(a.out + ".json", "w"), indent=1)
    open(a.out + ".md", "w").write("\n".join(md) + "\n")
    print(f"{len(all_misses)} bucket figures outside the bar; wrote {a.out}.md and .json")


if __name__ == "__main__":
    main()
