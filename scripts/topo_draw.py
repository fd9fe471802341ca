#!/usr/bin/env python3
"""Draws a fabric: `rocefab topo draw SCENARIO [-o FILE.png]` writes the JSON this reads.

usage: topo_draw.py TOPOLOGY.json OUT.png

TOPOLOGY.json: {"name", "switches": [{"name", "role": tor|leaf|spine}], "hosts": [{"name",
"tor", "kind", "ip"}], "links": [{"a", "b", "a_port", "b_port", "rate"}]}. Spines on top, leaves,
ToRs, hosts at the bottom, each tier spread evenly; every link a line labelled with the switch
port numbers at its ends, hosts labelled with their address and kind.
"""
import io
import json
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    t = json.load(open(sys.argv[1]))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tiers = {"spine": 3, "leaf": 2, "tor": 1}
    rows = {3: [], 2: [], 1: [], 0: []}
    for sw in t["switches"]:
        rows[tiers.get(sw["role"], 1)].append(sw["name"])
    # Hosts under their ToR, in ToR order.
    tor_order = {n: i for i, n in enumerate(rows[1])}
    for h in sorted(t["hosts"], key=lambda h: (tor_order.get(h["tor"], 0), h["name"])):
        rows[0].append(h["name"])
    if not rows[2]:
        rows = {3: rows[3], 2: rows[1], 1: rows[0]}  # 2 tiers: no leaf row
        host_row = 1
    else:
        host_row = 0
    width = max(len(v) for v in rows.values())
    pos = {}
    for y, names in rows.items():
        for i, n in enumerate(names):
            pos[n] = ((i + 0.5) * width / max(1, len(names)), y)
    hosts = {h["name"]: h for h in t["hosts"]}
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * width + 2), 2.2 * len(rows)))
    for l in t["links"]:
        (x1, y1), (x2, y2) = pos[l["a"]], pos[l["b"]]
        ax.plot([x1, x2], [y1, y2], color="0.6", linewidth=0.8, zorder=1)
        for end, (x, y), (ox, oy) in (("a", (x1, y1), (x2, y2)), ("b", (x2, y2), (x1, y1))):
            if l[end] in hosts:
                continue
            fx, fy = x + 0.18 * (ox - x), y + 0.18 * (oy - y)
            ax.text(fx, fy, f"p{l[end + '_port']}", fontsize=6, color="0.25", ha="center",
                    va="center", zorder=3, bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none"))
    colors = {3: "#c0504d", 2: "#9bbb59", 1: "#4f81bd", 0: "#f79646"}
    for y, names in rows.items():
        for n in names:
            x, _ = pos[n]
            is_host = n in hosts
            ax.scatter([x], [y], s=260 if not is_host else 140, marker="s" if not is_host else "o",
                       color=colors[0] if is_host else colors[y], zorder=2)
            if is_host:
                ax.text(x, y - 0.12, f"{n}\n{hosts[n]['ip']}\n({hosts[n]['kind']})", fontsize=7,
                        ha="center", va="top", zorder=4)
            else:  # beside the node, clear of the port labels on its links
                ax.text(x + 0.08, y + 0.06, n, fontsize=8, ha="left", va="bottom", zorder=4,
                        fontweight="bold")
    ax.set_xlim(-0.3, width + 0.3)
    ax.set_ylim(min(rows) - 0.8, max(rows) + 0.5)
    ax.axis("off")
    rate = sorted({l["rate"] for l in t["links"]})
    ax.set_title(f"{t['name']}: {len(t['switches'])} switches, {len(t['hosts'])} hosts, "
                 f"{len(t['links'])} links ({', '.join(rate)})")
    fig.tight_layout()
    # Rendered in memory, then written and closed here: an error of the write or the close
    # (a missing folder, a full disk, /dev/full) is reported, not lost in a buffer.
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    try:
        with open(sys.argv[2], "wb") as f:
            f.write(png.getvalue())
    except OSError as e:
        print(f"cannot write {sys.argv[2]}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
