#!/usr/bin/python3
"""Slowdowns of a rocefab anchor run under rocefab's and under the reference's ideal-FCT rule.

rocefab's ideal FCT (nic-emu/rdma_apps.cc IdealFct, topo/fabric.cc BaseRtt): base RTT = 2 x the
path's propagation + the store-and-forward time of one data packet per hop and of the ACK per
link, plus every byte of the flow with 82 header bytes per packet (Ethernet, IPv4, UDP, BTH,
ICRC, FCS) and a RETH at the NIC rate. The reference (shared/data/anchor-ns3/README.md: "base
RTT + serialization of all bytes with headers at the NIC rate"; its BDP of 104,000 B at
100 Gb/s means a cross-ToR base RTT of 8.32 us) counts 2 x propagation + one 1000-byte payload's
serialization per hop, and `--header` bytes per packet (default 48).

Reads the `fct.txt` that `rocefab sim ... --out DIR` writes for a trace workload
(`src dst sport dport size start_ns fct_ns standalone_fct_ns`) and prints avg/p99 per size bucket
(the reference's bucket edges, as rocefab's summary.json) under both rules, for flows starting at or after --measure-from.

Usage: bench/ns3_ideal_rule.py DIR/fct.txt [--header 48] [--hosts-per-tor 16]
       [--link-delay-ns 1000] [--rate-gbps 100] [--measure-from-ns 5000000]
"""
import argparse
import math
import sys

# The BDP split is [lo, hi): lt_bdp = size < 104,000 B. The five size buckets are (lo, hi] with
# decimal-KB edges, the reference's rule (kSizeBuckets in nic-emu/rdma_apps.h; docs/results.md).
BDP_SPLIT = [("all", 0, math.inf), ("lt_bdp", 0, 104000), ("ge_bdp", 104000, math.inf)]
SIZE_BUCKETS = [("le_4k", 0, 4000), ("4k_16k", 4000, 16000), ("16k_64k", 16000, 64000),
                ("64k_256k", 64000, 256000), ("gt_256k", 256000, math.inf)]
BUCKETS = BDP_SPLIT + SIZE_BUCKETS


def in_bucket(name, lo, hi, size):
    """The bucket rule: [lo, hi) for the BDP split, (lo, hi] for the size buckets."""
    if any(name == b[0] for b in BDP_SPLIT):
        return lo <= size < hi
    return lo < size <= hi


def p99(values):
    """Nearest-rank 99th percentile (as rocefab's summaries)."""
    v = sorted(values)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fct", help="fct.txt of a rocefab sim run")
    ap.add_argument("--header", type=int, default=48, help="header bytes per packet (reference rule)")
    ap.add_argument("--hosts-per-tor", type=int, default=16)
    ap.add_argument("--link-delay-ns", type=float, default=1000.0)
    ap.add_argument("--rate-gbps", type=float, default=100.0)
    ap.add_argument("--payload", type=int, default=1000, help="payload bytes per packet")
    ap.add_argument("--measure-from-ns", type=int, default=5_000_000)
    a = ap.parse_args()
    for name in ("header", "hosts_per_tor", "payload"):
        if getattr(a, name) <= 0 and not (name == "header" and getattr(a, name) == 0):
            sys.exit(f"--{name.replace('_', '-')}: must be positive")
    if a.rate_gbps <= 0 or a.link_delay_ns < 0:
        sys.exit("--rate-gbps must be > 0 and --link-delay-ns >= 0")
    ns_per_byte = 8 / a.rate_gbps
    ours = {b[0]: [] for b in BUCKETS}
    ref = {b[0]: [] for b in BUCKETS}
    try:
        f = open(a.fct)
    except OSError as e:
        sys.exit(f"{a.fct}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 8:
                sys.exit(f"{a.fct}:{n}: expected 8 columns (src dst sport dport size start_ns fct_ns "
                         f"standalone_fct_ns), got {len(parts)}")
            src, dst, _, _, size, start, fct, ideal = map(int, parts)
            if start < a.measure_from_ns:
                continue
            hops = 2 if src // a.hosts_per_tor == dst // a.hosts_per_tor else 4
            base = hops * 2 * a.link_delay_ns + hops * a.payload * ns_per_byte
            packets = max(1, math.ceil(size / a.payload))
            ref_ideal = base + (size + packets * a.header) * ns_per_byte
            for name, lo, hi in BUCKETS:
                if in_bucket(name, lo, hi, size):
                    ours[name].append(max(1.0, fct / ideal))
                    ref[name].append(max(1.0, fct / ref_ideal))
    if not ours["all"]:
        sys.exit(f"{a.fct}: no flow starts at or after {a.measure_from_ns} ns")
    print(f"{'bucket':10} {'count':>6} {'avg':>7} {'p99':>7} {'avg (ref rule)':>15} {'p99 (ref rule)':>15}")
    for name, _, _ in BUCKETS:
        o, r = ours[name], ref[name]
        if not o:
            continue
        print(f"{name:10} {len(o):6d} {sum(o) / len(o):7.3f} {p99(o):7.3f} "
              f"{sum(r) / len(r):15.3f} {p99(r):15.3f}")


if __name__ == "__main__":
    main()
