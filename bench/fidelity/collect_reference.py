#!/usr/bin/python3
"""Packs the reference ConWeave ns-3 simulator's outputs for one trace into bench/fidelity/.

Run the reference yourself (../shared/reference/reference-simulator.md: build, seeded trace,
`run.py --lb fecmp|conweave ...`), then point this script at its output folders. It copies the
trace (xz) and each run's FCT file (xz, as written: `src dst sport dport size start_ns fct_ns
standalone_fct_ns`) and PFC log (xz), counts the PFC frames its NICs and switches received
(`*_out_pfc.txt`, type 1 pause, 0 resume) and the CNPs its receivers flagged (`*_out_cnp.txt`, per NIC per 100 us:
by ECN, by out-of-order, total), and records them in bench/fidelity/traces.json. Only outputs are
stored, never the reference's code.

Usage: bench/fidelity/collect_reference.py NAME --flows FLOW_FILE --workload CDF --load L
           --seed N --window 5ms --measure-from 2ms [--ecmp OUT_DIR] [--conweave OUT_DIR]
           [--time-file SCHEME=FILE ...] [--topology TOPOLOGY_FILE]
OUT_DIR is the reference's mix/output/<id>/ folder (its config.txt names the flow file and the
load balancer; both are checked). --time-file takes `/usr/bin/time -f "%e %M"` output.
"""
import argparse
import hashlib
import json
import lzma
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "traces.json")
LB_MODES = {"ecmp": "0", "conweave": "9"}  # run.py lb_modes: fecmp 0, conweave 9


def fail(msg):
    sys.exit(f"collect_reference: {msg}")


def config_of(out_dir):
    cfg = {}
    try:
        for line in open(os.path.join(out_dir, "config.txt")):
            parts = line.split()
            if len(parts) >= 2:
                cfg[parts[0]] = parts[1]
    except OSError as e:
        fail(f"{out_dir}/config.txt: {e.strerror}")
    return cfg


# The reference's ConWeave counters, printed at the end of its config.log ("Number of ...:N"
# under "ConWeave History"): its decisions, to compare with rocefab's conweave stats.
CONWEAVE_COUNTERS = {
    "INIT's Reply sent (RTT_REPLY)": "rtt_replies",
    "Timely RTT_REPLY (INIT's Reply)": "timely_replies",
    "TAIL's Reply Sent (CLEAR)": "clears",
    "NOTIFY Sent": "notifies",
    "Rerouting": "reroutes_incl_same_path",
    "OoO enqueued pkts": "held",
    "VOQ Flush Total": "reorder_releases",
    "VOQ Flush by TAIL": "releases_by_tail",
}


def conweave_counters(out_dir):
    found = {}
    try:
        for line in open(os.path.join(out_dir, "config.log")):
            m = re.match(r"Number of (.+):(\d+)\s*$", line)
            if m and m.group(1) in CONWEAVE_COUNTERS:
                found[CONWEAVE_COUNTERS[m.group(1)]] = int(m.group(2))
    except OSError:
        return None
    if "reorder_releases" in found and "releases_by_tail" in found:
        found["releases_by_timeout"] = found["reorder_releases"] - found["releases_by_tail"]
    return found or None


def convert_topology(topo, flows):
    """bench/fidelity/topologies/<name>.json from the reference's topology file (its fabric
    only: the settings come from the scenario templates when bench/fidelity.py runs)."""
    name = os.path.splitext(os.path.basename(topo))[0]
    rel = f"topologies/{name}.json"
    script = os.path.join(HERE, "..", "..", "scripts", "ns3_to_rocefab.py")
    r = subprocess.run([sys.executable, script, topo, flows], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{topo}: {r.stderr.strip()}")
    os.makedirs(os.path.join(HERE, "topologies"), exist_ok=True)
    with open(os.path.join(HERE, rel), "w") as f:
        json.dump(json.loads(r.stdout)["topology"], f, indent=1)
    return rel


def pack(src, dst):
    with open(src, "rb") as f, lzma.open(dst, "wb", preset=9) as g:
        g.write(f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name")
    ap.add_argument("--flows", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--load", type=float, required=True, help="host load, 0..1")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--window", required=True, help="arrival window, e.g. 5ms")
    ap.add_argument("--measure-from", required=True, help="count flows starting at or after this")
    ap.add_argument("--ecmp")
    ap.add_argument("--conweave")
    ap.add_argument("--time-file", action="append", default=[])
    ap.add_argument("--topology", help="the reference's topology file when it is not "
                    "leaf_spine_128_100G_OS2: converted by scripts/ns3_to_rocefab.py into "
                    "bench/fidelity/topologies/<its name>.json, which the trace then names")
    a = ap.parse_args()
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{0,40}", a.name):
        fail(f"NAME must be 1-41 of [a-z0-9.-], got {a.name!r}")
    times = {}
    for t in a.time_file:
        scheme, _, path = t.partition("=")
        wall, kb = open(path).read().split()[:2]
        times[scheme] = (float(wall), int(kb) // 1024)
    os.makedirs(os.path.join(HERE, "traces"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "reference"), exist_ok=True)
    raw = open(a.flows, "rb").read()
    flows_rel = f"traces/{a.name}.flows.txt.xz"
    pack(a.flows, os.path.join(HERE, flows_rel))
    entry = {"name": a.name, "workload": a.workload, "host_load": a.load, "seed": a.seed,
             "window": a.window, "measure_from": a.measure_from, "flows": flows_rel,
             "flow_count": int(raw.split(b"\n", 1)[0]), "md5": hashlib.md5(raw).hexdigest(),
             "reference": {}}
    if a.topology:
        entry["topology"] = convert_topology(a.topology, a.flows)
    for scheme in ("ecmp", "conweave"):
        out = getattr(a, scheme)
        if not out:
            continue
        out = out.rstrip("/")
        cfg = config_of(out)
        if a.topology and os.path.basename(cfg.get("TOPOLOGY_FILE", "")) != \
                os.path.basename(a.topology):
            fail(f"{out}: TOPOLOGY_FILE {cfg.get('TOPOLOGY_FILE')} is not {a.topology}")
        if os.path.basename(cfg.get("FLOW_FILE", "")) != os.path.basename(a.flows):
            fail(f"{out}: FLOW_FILE {cfg.get('FLOW_FILE')} is not {a.flows}")
        if cfg.get("LB_MODE") != LB_MODES[scheme]:
            fail(f"{out}: LB_MODE {cfg.get('LB_MODE')} is not {scheme}'s {LB_MODES[scheme]}")
        rid = os.path.basename(out)
        fct = os.path.join(out, f"{rid}_out_fct.txt")
        lines = sum(1 for _ in open(fct))
        pause = resume = 0
        for line in open(os.path.join(out, f"{rid}_out_pfc.txt")):
            p = line.split()
            if len(p) == 5:
                pause += p[4] == "1"
                resume += p[4] == "0"
        ecn = ooo = total = 0
        for line in open(os.path.join(out, f"{rid}_out_cnp.txt")):
            p = line.split()
            if len(p) == 5:
                ecn += int(p[2]); ooo += int(p[3]); total += int(p[4])
        fct_rel = f"reference/{a.name}.{scheme}.fct.txt.xz"
        pack(fct, os.path.join(HERE, fct_rel))
        # The PFC log itself too: who paused whom (pfc_by_link.py, bench/fidelity.py).
        pfc_rel = f"reference/{a.name}.{scheme}.pfc.txt.xz"
        pack(os.path.join(out, f"{rid}_out_pfc.txt"), os.path.join(HERE, pfc_rel))
        r = {"fct": fct_rel, "pfc_log": pfc_rel, "flows_completed": lines,
             "pfc_frames_received": {"pause": pause, "resume": resume},
             "cnps": {"by_ecn": ecn, "by_out_of_order": ooo, "total": total},
             "config": {k: cfg[k] for k in ("BUFFER_SIZE", "CC_MODE", "LB_MODE", "ENABLE_PFC",
                                            "ACK_HIGH_PRIO", "LOAD") if k in cfg}}
        if scheme in times:
            r["wall_s"], r["peak_mib"] = times[scheme]
        if scheme == "conweave" and (cw := conweave_counters(out)):
            r["conweave"] = cw
        entry["reference"][scheme] = r
    manifest = json.load(open(MANIFEST)) if os.path.exists(MANIFEST) else {"traces": []}
    manifest["traces"] = [t for t in manifest["traces"] if t["name"] != a.name] + [entry]
    manifest["traces"].sort(key=lambda t: t["name"])
    manifest.setdefault("simulator", "conweave-project/conweave-ns3 236a801 (ns-3.19), "
                        "leaf_spine_128_100G_OS2, dcqcn, pfc 1, irn 0, buffer 9 MB")
    with open(MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"{a.name}: {entry['flow_count']} flows; " + ", ".join(
        f"{s}: {r['flows_completed']} FCTs, {sum(r['pfc_frames_received'].values())} PFC, "
        f"{r['cnps']['total']} CNPs" for s, r in entry["reference"].items()))


if __name__ == "__main__":
    main()
