#!/usr/bin/python3
"""RDMA vs TCP latency on one fabric (issue 24; Guo et al., SIGCOMM 2016 §5, the Pingmesh figure:
RDMA p99 90 us against TCP 700 us; RDMA p99.9 about 200 us). One command:

  bench/rdma_vs_tcp.py --out results/rdma-vs-tcp            (as root; --sim-only without)

1. The kernels' own cost, no fabric: scripts/tcp_pingmesh.py (the live runner's TCP prober)
   between two network namespaces joined by one veth pair, and ping between them.
2. Live, at --rate (default 100 Mb/s, a rate this 2-vCPU VM emulates faithfully): `rocefab live`
   of configs/scenarios/pingmesh.json (idle) and pingmesh-loaded.json (Poisson RDMA on the lossless
   class, bulk TCP on the lossy class): RDMA Pingmesh between the fabric's emulated NICs, a real
   ib_send_lat between two namespace hosts, TCP Pingmesh between the namespace hosts' kernels.
   Each row carries the run's timing verdict: a live figure stands only where the run was faithful.
3. Sim, the same two scenarios at --rate and at the paper's 40 Gb/s (TCP probes run as ICMP echoes
   on the lossy class: no kernel in the sim).

Writes <out>/results.json and <out>/results.md and prints the table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBER = os.path.join(ROOT, "scripts", "tcp_pingmesh.py")


def rocefab():
    built = os.path.join(ROOT, "build", "rocefab")
    return built if os.path.exists(built) else "rocefab"


def pct(v, p):
    v = sorted(v)
    if not v:
        return 0.0
    k = max(1, min(len(v), int(-(-p * len(v) // 1))))
    return v[k - 1]


def kernel_baseline(count, interval, size):
    """tcp_pingmesh.py and ping across one veth pair between two namespaces of our own."""
    tag = f"rfb{os.getpid() & 0xFFFF:04x}"
    a, b = tag + "a", tag + "b"
    sh = lambda *c: subprocess.run(list(c), check=True, capture_output=True, text=True)
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", tag + "0", "netns", a, "type", "veth", "peer", tag + "1", "netns", b)
        sh("ip", "-n", a, "addr", "add", "10.254.77.1/30", "dev", tag + "0")
        sh("ip", "-n", b, "addr", "add", "10.254.77.2/30", "dev", tag + "1")
        for ns, dev in ((a, tag + "0"), (b, tag + "1")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        srv = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, PROBER, "serve", "7001"])
        try:
            out = sh("ip", "netns", "exec", a, sys.executable, PROBER, "probe", "7001", str(interval),
                     str(count), str(size), "10.254.77.2").stdout
            tcp = json.loads(out)["10.254.77.2"]["rtt_us"]
        finally:
            srv.kill()
            srv.wait()
        ping = sh("ip", "netns", "exec", a, "ping", "-q", "-c", str(count), "-i", str(interval), "-s",
                  str(size), "10.254.77.2").stdout
        icmp = ping.strip().splitlines()[-1]  # rtt min/avg/max/mdev = ...
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    return {"tcp_probes": len(tcp), "tcp_rtt_p50_us": pct(tcp, 0.5), "tcp_rtt_p99_us": pct(tcp, 0.99),
            "tcp_rtt_p999_us": pct(tcp, 0.999), "ping": icmp}


def run(runner, scenario, sets, out):
    cmd = [rocefab(), runner, os.path.join(ROOT, "configs/scenarios", scenario), "--out", out]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    path = os.path.join(out, "summary.json")
    if not os.path.exists(path):
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    with open(path) as f:
        s = json.load(f)
    c = s.get("rdma_vs_tcp") or {}
    t = s.get("timing") or {}
    return {"command": " ".join(cmd), "rc": p.returncode, "faithful": t.get("faithful"),
            "verdict": t.get("verdict"), "rdma_vs_tcp": c}


def fmt(side):
    if not side:
        return "-"
    return f"{side['rtt_p50_us']:.1f} / {side['rtt_p99_us']:.1f} / {side['rtt_p999_us']:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/rdma-vs-tcp")
    ap.add_argument("--rate", default="100Mbps", help="link rate of the live runs and the first sim runs")
    ap.add_argument("--sim-only", action="store_true", help="no namespaces (no root needed)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    live = os.geteuid() == 0 and not args.sim_only
    res = {"rate": args.rate, "runs": {}}
    if live:
        res["kernel_baseline"] = kernel_baseline(100, 0.001, 512)
    rate = [f"topology.clos.link_rate={args.rate}"]
    plan = [("sim", r, sc, sets) for r, sets in ((args.rate, rate), ("40Gbps", ["topology.clos.link_rate=40Gbps"]))
            for sc in ("pingmesh.json", "pingmesh-loaded.json")]
    if live:
        plan = [("live", args.rate, sc, rate) for sc in ("pingmesh.json", "pingmesh-loaded.json")] + plan
    for runner, r, sc, sets in plan:
        key = f"{runner} {r} {sc.replace('.json', '')}"
        res["runs"][key] = run(runner, sc, sets, os.path.join(args.out, key.replace(" ", "-")))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    lines = ["| run | RDMA Pingmesh p50 / p99 / p99.9 us | RDMA verbs (ib_send_lat, 2 x one-way) | "
             "TCP p50 / p99 / p99.9 us | TCP / RDMA p99 | timing |", "|---|---|---|---|---|---|"]
    for key, r in res["runs"].items():
        c = r["rdma_vs_tcp"]
        ratio = c.get("tcp_over_rdma", {}).get("rtt_p99_us")
        verdict = "exact (sim)" if key.startswith("sim") else (r["verdict"] or "?")
        lines.append(f"| {key} | {fmt(c.get('rdma'))} | {fmt(c.get('rdma_verbs'))} | {fmt(c.get('tcp'))} "
                     f"({c.get('tcp_kind', '-').split(' (')[0]}) | {ratio:.1f}x | {verdict} |"
                     if c else f"| {key} | - | - | - | - | {verdict} |")
    if "kernel_baseline" in res:
        k = res["kernel_baseline"]
        lines.append(f"\nKernel baseline, one veth pair and no fabric: TCP (tcp_pingmesh.py) p50 / p99 / p99.9 "
                     f"{k['tcp_rtt_p50_us']:.1f} / {k['tcp_rtt_p99_us']:.1f} / {k['tcp_rtt_p999_us']:.1f} us; "
                     f"ping: {k['ping']}")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
