#!/usr/bin/python3
"""Writes a flow file (the reference simulator's format) that shows which path each flow takes.

Groups of 3 flows of 1 MB start together, every 400 us, each group from three hosts under one
ToR to three hosts under another of the reference's 128-host leaf-spine
(leaf_spine_128_100G_OS2: 8 ToRs x 16 hosts, 8 spines, 100 Gb/s). A flow alone on its spine
finishes in about 85 us; two or three flows that hash onto the same spine share its links and
take about twice or three times as long, so each flow's FCT tells how many of its group took
its spine. Run the reference on it (../shared/reference/reference-simulator.md: copy the file
to its config/ under the name run.py expects, e.g. L_25.00_CDF_PathProbe_N_128_T_25ms_B_100_flow.txt
with --netload 50 --cdf PathProbe --simul_time 0.025) and rocefab with "compat": "conweave-ns3":
the same FCT per flow means the same draw (switch/ecmp.h).

Usage: bench/fidelity/path_probe.py [--groups 60] [-o OUT]
"""
import argparse
import sys

HOSTS_PER_TOR, TORS = 16, 8


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=60)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--gap-us", type=int, default=400)
    ap.add_argument("-o", "--out", default="-")
    a = ap.parse_args()
    lines = []
    for g in range(a.groups):
        src_tor, dst_tor = g % TORS, (g + 3) % TORS
        start = 2.0 + g * a.gap_us * 1e-6
        for i in range(3):
            src = src_tor * HOSTS_PER_TOR + (g * 3 + i) % HOSTS_PER_TOR
            dst = dst_tor * HOSTS_PER_TOR + (g * 5 + 7 * i) % HOSTS_PER_TOR
            lines.append(f"{src} {dst} 3 {a.size} {start:.9f}")
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    out.write(f"{len(lines)}\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
