#!/usr/bin/python3
"""PFC frames by link direction: the reference ns-3 simulator's against rocefab's.

The reference logs every PFC frame a device receives (`*_out_pfc.txt`: time_ns node node_type
if_index type, type 1 pause, 0 resume); its topology file gives each node's devices in the order
of its links (device 0 is the loopback, so a node's k-th link is if_index k). A frame received on
(node, if_index) was sent by the link's other end. rocefab's summary.json counts what each switch
port sent (`pfc.<prio>.tx_xoff` / `tx_xon`) and names the peer. Both are grouped by direction
(tor->host: a ToR pausing a server's NIC; tor->spine and spine->tor between switches; a switch is
a ToR when a server is linked to it; every other switch counts as a spine, so on the 3-tier
fat-tree aggregation and core switches fall together, on both sides) and, per direction, how many
ports sent any and the most any one port sent. The per-link list (--ports) names the reference's
nodes as rocefab's leaf-spine does (h<id>, tor<k>, spine<k>): on other fabrics only the
per-direction table lines up.

Usage: bench/fidelity/pfc_by_link.py --topology TOPOLOGY.txt --reference PFC_FILE[.xz]
                                      [--rocefab SUMMARY_JSON] [--prio 3] [--json OUT]
"""
import argparse
import collections
import json
import lzma
import sys


def reference_links(path):
    """(node, if_index) -> peer node, and the set of ToRs, from a reference topology file."""
    with open(path) as f:
        n_nodes, n_switches, n_links = (int(x) for x in f.readline().split()[:3])
        switches = {int(x) for x in f.readline().split()}
        peer, next_if = {}, collections.Counter()
        for _ in range(n_links):
            a, b = (int(x) for x in f.readline().split()[:2])
            for x, y in ((a, b), (b, a)):
                next_if[x] += 1
                peer[(x, next_if[x])] = y
    if len(switches) != n_switches:
        sys.exit(f"pfc_by_link: {path}: {n_switches} switches announced, {len(switches)} listed")
    tors = {y for (x, _), y in peer.items() if x not in switches and y in switches}
    kind = {n: "host" if n not in switches else "tor" if n in tors else "spine"
            for n in range(n_nodes)}
    # rocefab's names for the same nodes (scripts/ns3_to_rocefab.py): h<node id>, and switches
    # numbered by kind in node id order (tor0.., spine0..).
    name, seen = {}, collections.Counter()
    for n in range(n_nodes):
        k = kind[n]
        name[n] = f"h{n}" if k == "host" else f"{k}{seen[k]}"
        seen[k] += 1
    return peer, kind, name


def count_reference(pfc_path, peer, kind, name):
    by_port = collections.defaultdict(lambda: [0, 0])  # (sender, receiver) -> [pause, resume]
    with (lzma.open(pfc_path, "rt") if pfc_path.endswith(".xz") else open(pfc_path)) as f:
        for n, line in enumerate(f, 1):
            p = line.split()
            if len(p) != 5:
                continue
            node, if_index, typ = int(p[1]), int(p[3]), p[4]
            if (node, if_index) not in peer:
                sys.exit(f"pfc_by_link: {pfc_path} line {n}: node {node} has no device {if_index}")
            sender = peer[(node, if_index)]
            by_port[(sender, node)][0 if typ == "1" else 1] += 1
    return {(kind[s], kind[r], f"{name[s]}->{name[r]}"): v for (s, r), v in by_port.items()}


def rocefab_kind(name):
    return "tor" if name.startswith("tor") else "spine" if name.startswith(("spine", "leaf", "agg",
                                                                             "core")) else "host"


def count_rocefab(summary_path, prio):
    s = json.load(open(summary_path))
    out = {}
    for name, sw in s["switches"].items():
        for p in sw["ports"]:
            c = p.get("pfc", {}).get(str(prio), {})
            xoff, xon = c.get("tx_xoff", 0), c.get("tx_xon", 0)
            if xoff or xon:
                peer = p.get("peer", "?").split("/")[0]
                out[(rocefab_kind(name), rocefab_kind(peer), f"{name}->{peer}")] = [xoff, xon]
    return out


def by_direction(counts):
    d = collections.defaultdict(lambda: {"pause": 0, "resume": 0, "ports": 0, "max_port": 0})
    for (s, r, _), (pause, resume) in counts.items():
        e = d[f"{s}->{r}"]
        e["pause"] += pause
        e["resume"] += resume
        e["ports"] += 1
        e["max_port"] = max(e["max_port"], pause + resume)
    return dict(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", required=True)
    ap.add_argument("--reference", required=True, help="the reference's *_out_pfc.txt")
    ap.add_argument("--rocefab", help="rocefab's summary.json of the same trace")
    ap.add_argument("--prio", type=int, default=3)
    ap.add_argument("--ports", type=int, default=0,
                    help="also list the N links with the most PFC frames on either side")
    ap.add_argument("--json", help="write the per-direction figures here")
    a = ap.parse_args()
    peer, kind, name = reference_links(a.topology)
    ref_ports = count_reference(a.reference, peer, kind, name)
    our_ports = count_rocefab(a.rocefab, a.prio) if a.rocefab else {}
    ref, ours = by_direction(ref_ports), by_direction(our_ports)
    print(f"{'direction':14} {'ns-3 pause':>11} {'resume':>7} {'ports':>6} {'max':>6}" +
          (f" | {'rocefab xoff':>12} {'xon':>6} {'ports':>6} {'max':>6}" if ours else ""))
    for k in sorted(set(ref) | set(ours)):
        r = ref.get(k, {"pause": 0, "resume": 0, "ports": 0, "max_port": 0})
        line = f"{k:14} {r['pause']:11,d} {r['resume']:7,d} {r['ports']:6d} {r['max_port']:6,d}"
        if ours:
            o = ours.get(k, {"pause": 0, "resume": 0, "ports": 0, "max_port": 0})
            line += f" | {o['pause']:12,d} {o['resume']:6,d} {o['ports']:6d} {o['max_port']:6,d}"
        print(line)
    if a.ports:
        r = {k[2]: v for k, v in ref_ports.items()}
        o = {k[2]: v for k, v in our_ports.items()}
        top = sorted(set(r) | set(o), key=lambda k: -max(sum(r.get(k, [0])), sum(o.get(k, [0]))))
        print(f"\n{'link':18} {'ns-3 pause':>11} {'resume':>7} | {'rocefab xoff':>12} {'xon':>6}")
        for k in top[:a.ports]:
            rp, rr = r.get(k, [0, 0])
            op, orr = o.get(k, [0, 0])
            print(f"{k:18} {rp:11,d} {rr:7,d} | {op:12,d} {orr:6,d}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"reference": {"by_direction": ref,
                                     "by_link": {k[2]: v for k, v in ref_ports.items()}},
                       "rocefab": {"by_direction": ours,
                                   "by_link": {k[2]: v for k, v in our_ports.items()}}},
                      f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
