#!/usr/bin/env python3
"""Converts the HPCC/ConWeave ns-3 simulators' inputs into a rocefab scenario.

Usage: scripts/ns3_to_rocefab.py TOPOLOGY FLOWS [-o OUT.json] [--scheme ecmp|conweave]
                                 [--template SCENARIO.json] [--compat conweave-ns3|none]

TOPOLOGY is the reference's topology file: "nodes switches links", then the switch node ids, then
one "src dst rate delay error_rate" line per link (e.g. "0 128 100Gbps 1000ns 0"). FLOWS is its
flow file ("count", then "src dst pg size start_s" lines; .xz is read as is by rocefab). Hosts
must be the node ids 0..H-1 (the reference's convention); they become h<id>, so the flow file's
node ids are rocefab host indices. Switches with hosts become ToRs (tor<k>, subnet 10.<k+1>.0.0/24),
switches linked to ToRs and to other switches leaves, the others spines. Delays become cable
lengths (5 ns per metre), rates are kept, a non-zero error rate becomes a link_loss fault on both
directions. Every other setting (buffer, PFC thresholds, ECN, DCQCN, payload, ACK interval,
ConWeave timers) comes from the template, by default configs/scenarios/ns3-alistorage-128h.json
(or its -conweave twin): the mapping of each reference parameter is in configs/scenarios/README.md.
--compat (default conweave-ns3) writes the scenario's "compat" key: the reference's own framing,
PFC rule, buffer admission, reorder memory and ideal-FCT rule (topo/compat.h), for a comparison
with the reference; the template's explicit XON offset is then dropped for the model's. "none"
keeps real Ethernet and the template's settings. Errors name the file, line and rule, and exit 2.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(HERE, "..", "configs", "scenarios")


def fail(msg):
    print(f"ns3_to_rocefab: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_time_ns(text, where):
    units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    for u in ("ns", "us", "ms", "s"):
        if text.endswith(u):
            try:
                v = float(text[: -len(u)]) * units[u]
            except ValueError:
                break
            if v < 0:
                fail(f"{where}: delay must be >= 0, got {text}")
            return v
    fail(f"{where}: delay must be a number with ns, us, ms or s, got {text!r}")


def read_topology(path):
    try:
        lines = [l.split() for l in open(path)]
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    lines = [l for l in lines if l]
    try:
        n_nodes, n_switches, n_links = (int(x) for x in lines[0][:3])
    except (IndexError, ValueError):
        fail(f"{path}:1: expected 'nodes switches links'")
    if len(lines) < 2 + n_links:
        fail(f"{path}: {n_links} links announced, {max(0, len(lines) - 2)} lines found")
    try:
        switches = [int(x) for x in lines[1][:n_switches]]
    except ValueError:
        fail(f"{path}:2: switch ids must be integers")
    if len(switches) != n_switches:
        fail(f"{path}:2: {n_switches} switch ids announced, {len(switches)} given")
    hosts = sorted(set(range(n_nodes)) - set(switches))
    if hosts != list(range(len(hosts))):
        fail(f"{path}: hosts must be the node ids 0..{len(hosts) - 1} (the reference's convention)")
    links = []
    for i, l in enumerate(lines[2 : 2 + n_links], start=3):
        if len(l) < 4:
            fail(f"{path}:{i}: expected 'src dst rate delay [error_rate]'")
        try:
            a, b = int(l[0]), int(l[1])
        except ValueError:
            fail(f"{path}:{i}: node ids must be integers")
        for n in (a, b):
            if not 0 <= n < n_nodes:
                fail(f"{path}:{i}: node {n} outside 0..{n_nodes - 1}")
        err = float(l[4]) if len(l) > 4 else 0.0
        if not 0 <= err <= 1:
            fail(f"{path}:{i}: error rate must be 0..1, got {l[4]}")
        links.append((a, b, l[2], parse_time_ns(l[3], f"{path}:{i}"), err))
    return n_nodes, switches, hosts, links


def convert(topo_path, flows_path, scheme, template_path, compat="conweave-ns3"):
    n_nodes, switch_ids, hosts, links = read_topology(topo_path)
    sw = set(switch_ids)
    tor_of = {}
    neighbours = {s: set() for s in switch_ids}
    for a, b, *_ in links:
        if a in sw and b in sw:
            neighbours[a].add(b)
            neighbours[b].add(a)
        elif a in sw or b in sw:
            h, s = (b, a) if a in sw else (a, b)
            if h in tor_of:
                fail(f"{topo_path}: host {h} has a second link")
            tor_of[h] = s
        else:
            fail(f"{topo_path}: link {a}-{b} joins two hosts")
    missing = [h for h in hosts if h not in tor_of]
    if missing:
        fail(f"{topo_path}: host {missing[0]} has no link")
    tors = [s for s in switch_ids if s in tor_of.values()]
    name = {}
    for k, s in enumerate(tors):
        name[s] = f"tor{k}"
    leaves = [s for s in switch_ids if s not in name and neighbours[s] & set(tors)
              and neighbours[s] - set(tors)]
    for k, s in enumerate(leaves):
        name[s] = f"leaf{k}"
    for k, s in enumerate(s for s in switch_ids if s not in name):
        name[s] = f"spine{k}"
    for h in hosts:
        name[h] = f"h{h}"
    switches = []
    for s in switch_ids:
        e = {"name": name[s]}
        if s in tors:
            k = tors.index(s)
            e.update(role="tor", subnet=f"10.{k + 1}.0.0/24")
        else:
            e["role"] = "leaf" if s in leaves else "spine"
        switches.append(e)
    host_list, next_ip = [], {}
    for h in hosts:
        t = tors.index(tor_of[h])
        next_ip[t] = next_ip.get(t, 1) + 1
        if next_ip[t] > 254:
            fail(f"{topo_path}: more than 253 hosts under switch {tor_of[h]}")
        host_list.append({"name": name[h], "tor": name[tor_of[h]], "ip": f"10.{t + 1}.0.{next_ip[t]}",
                          "kind": "builtin"})
    link_list, faults = [], []
    for a, b, rate, delay_ns, err in links:
        link_list.append({"a": name[a], "b": name[b], "rate": rate, "cable": f"{delay_ns / 5:g}m"})
        if err > 0:
            for x, y in ((a, b), (b, a)):
                faults.append({"kind": "link_loss", "from": name[x], "to": name[y], "rate": err,
                               "at": "0s"})
    try:
        scenario = json.load(open(template_path))
    except (OSError, ValueError) as e:
        fail(f"{template_path}: {e}")
    scenario["name"] = os.path.splitext(os.path.basename(topo_path))[0] + "-" + scheme
    scenario["description"] = (f"Converted by scripts/ns3_to_rocefab.py from {topo_path} and "
                               f"{flows_path}; settings from {os.path.basename(template_path)}.")
    scenario["topology"] = {"switches": switches, "hosts": host_list, "links": link_list}
    for item in scenario.get("traffic", []):
        if item.get("pattern") == "trace":
            item["file"] = os.path.abspath(flows_path)
    if faults:
        scenario["faults"] = faults
    if compat != "none":
        scenario["compat"] = compat
        scenario.get("buffer", {}).pop("xon_offset", None)  # the compat model's XON offset
    else:
        scenario.pop("compat", None)
    return scenario


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("topology")
    p.add_argument("flows")
    p.add_argument("-o", "--output", help="scenario file to write (default: stdout)")
    p.add_argument("--scheme", choices=["ecmp", "conweave"], default="ecmp")
    p.add_argument("--template", help="scenario whose settings are kept")
    p.add_argument("--compat", choices=["conweave-ns3", "none"], default="conweave-ns3",
                   help="model the reference's accounting (default) or real Ethernet")
    args = p.parse_args()
    template = args.template or os.path.join(
        SCENARIOS, "ns3-alistorage-128h" + ("-conweave" if args.scheme == "conweave" else "") + ".json")
    if not os.path.exists(args.flows):
        fail(f"{args.flows}: no such flow file")
    scenario = convert(args.topology, args.flows, args.scheme, template, args.compat)
    text = json.dumps(scenario, indent=2) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
        t = scenario["topology"]
        print(f"wrote {args.output}: {len(t['switches'])} switches, {len(t['hosts'])} hosts, "
              f"{len(t['links'])} links")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
