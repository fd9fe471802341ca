#!/usr/bin/python3
"""rocefab report RESULTS_DIR [--html]: tables and PNG plots of a run's results folder.

Reads summary.json (required) and, when present, timeseries.csv, fct.txt and pings.csv; prints
latency percentiles, perftest results, FCT slowdown by size bucket, PFC frames and drops per
switch; writes report_latency_cdf.png, report_fct_slowdown.png, report_fct_cdf.png,
report_pause_heatmap.png and report_throughput.png next to them (only the plots the data allows). Percentiles are
nearest-rank over the recorded samples. Uses Debian's python3-matplotlib and python3-numpy.
With --html it also writes report.html: the same tables and every plot embedded (base64), plus
the crosscheck table when the folder has one; it needs nothing online.
"""
import base64
import csv
import html
import io
import json
import math
import os
import signal
import sys


def pct(values, p):
    """Nearest-rank percentile (p in (0, 1])."""
    if not values:
        return 0.0
    v = sorted(values)
    return v[max(1, min(len(v), math.ceil(p * len(v)))) - 1]


def plain_log_axis(ax, values):
    """A log x axis with plain tick numbers (1, 2, 5, 10, ...), or a linear one when the values
    span less than a decade (a log axis would show one tick or none)."""
    import matplotlib.ticker as mt
    if not values:
        return
    lo, hi = min(values), max(values)
    if lo <= 0 or hi / lo < 10:
        return
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(mt.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    fmt = mt.ScalarFormatter()
    fmt.set_scientific(False)
    ax.xaxis.set_major_formatter(fmt)
    ax.xaxis.set_minor_formatter(mt.NullFormatter())


def step_cdf(ax, values, **kw):
    """The empirical CDF of `values` as a step line."""
    v = sorted(values)
    ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", **kw)


def save(fig, d, name, written):
    """Writes the figure to d/name and lists it in `written`."""
    out = os.path.join(d, name)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    written.append(out)


class Tee(io.TextIOBase):
    """stdout that also keeps what was printed (for report.html)."""

    def __init__(self, out):
        self.out, self.kept = out, io.StringIO()

    def write(self, text):
        self.kept.write(text)
        return self.out.write(text)

    def flush(self):
        self.out.flush()


def write_html(d, s, text, written):
    """report.html: title, the timing verdict, the tables as printed, every plot inline."""
    title = html.escape(f"{s.get('scenario')} ({s.get('runner')})")
    verdict = (s.get("timing") or {}).get("verdict", "")
    ok = (s.get("timing") or {}).get("faithful", True)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>rocefab report: {title}</title>",
             "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
             "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:13px}"
             ".bad{color:#b00;font-weight:bold}.good{color:#070}img{max-width:100%;margin:1em 0}</style>",
             f"</head><body><h1>rocefab report: {title}</h1>",
             f"<p class='{'good' if ok else 'bad'}'>timing: {html.escape(verdict)}</p>" if verdict else ""]
    xc = os.path.join(d, "crosscheck.txt")
    if os.path.exists(xc):
        parts.append("<h2>crosscheck</h2><pre>" + html.escape(open(xc).read()) + "</pre>")
    parts.append("<h2>tables</h2><pre>" + html.escape(text) + "</pre>")
    if written:
        parts.append("<h2>plots</h2>")
    for png in written:
        data = base64.b64encode(open(png, "rb").read()).decode()
        parts.append(f"<div><img alt='{html.escape(os.path.basename(png))}' src='data:image/png;base64,{data}'></div>")
    parts.append("</body></html>")
    out = os.path.join(d, "report.html")
    with open(out, "w") as f:
        f.write("\n".join(parts))
    return out


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `rocefab report DIR | head` ends quietly
    args = [a for a in sys.argv[1:] if a != "--html"]
    want_html = len(args) != len(sys.argv) - 1
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args and args[0] in ("-h", "--help") else 2
    tee = Tee(sys.stdout)
    sys.stdout = tee
    d = args[0]
    path = os.path.join(d, "summary.json")
    if not os.path.exists(path):
        print(f"rocefab report: {path}: no summary.json (run rocefab sim/live with --out first)", file=sys.stderr)
        return 2
    s = json.load(open(path))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    print(f"report of {d}: scenario {s.get('scenario')}, runner {s.get('runner')}")
    title = f"{s.get('scenario')} ({s.get('runner')})"
    timing = s.get("timing") or {}
    if timing.get("verdict"):
        # A live run's figures stand only if it kept the exact schedule (docs/results.md).
        print(f"timing: {timing['verdict']}")
    written = []
    # Latency.
    series = []
    if s.get("pings"):
        print(f"\n{'ping':18} {'sent':>5} {'loss%':>6} {'p50 us':>9} {'p99 us':>9} {'max us':>9}")
        for p in s["pings"]:
            print(f"{p['from'] + '->' + p['to']:18} {p['sent']:5d} {p['loss_pct']:6.2f} {p['rtt_p50_us']:9.2f} "
                  f"{p['rtt_p99_us']:9.2f} {p['rtt_max_us']:9.2f}")
            if p.get("rtt_us"):
                series.append((f"ping {p['from']}->{p['to']}", p["rtt_us"]))
    if s.get("iperf3"):
        print(f"\n{'iperf3':18} {'streams':>7} {'Gb/s':>8} {'retransmits':>11} {'done':>5}")
        for i in s["iperf3"]:
            print(f"{i['from'] + '->' + i['to']:18} {i.get('streams', 1):7d} {i.get('gbps', 0.0):8.3f} "
                  f"{i.get('retransmits', 0):11d} {'yes' if i.get('completed') else 'no':>5}")
    if s.get("flows"):
        print(f"\n{'UDP flow':18} {'sent':>8} {'received':>9} {'lost':>7} {'Gb/s':>8} {'lat avg us':>10}")
        for f in s["flows"]:
            print(f"{f['from'] + '->' + f['to']:18} {f['sent']:8d} {f['received']:9d} {f['lost']:7d} "
                  f"{f.get('goodput_gbps', 0.0):8.3f} {f.get('latency_avg_us', 0.0):10.2f}")
    for r in (s.get("rdma") or []):
        if "latency_us" in r:
            lat = r["latency_us"]
            print(f"\n{r['test']} {r['from']}->{r['to']} {r['size']} B: p50 {pct(lat, .5):.2f} us, p99 {pct(lat, .99):.2f} us, "
                  f"p99.9 {pct(lat, .999):.2f} us, max {max(lat) if lat else 0:.2f} us ({len(lat)} samples)")
            if lat:  # a test that had not started by the end has no samples to plot
                series.append((f"{r['test']} {r['from']}->{r['to']}", lat))
        elif "bw_avg_gbps" in r:
            print(f"\n{r['test']} {r['from']}->{r['to']} {r['size']} B x {r['iterations']}: {r['bw_avg_gbps']:.2f} Gb/s")
    if series:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        styles = ["-", "--", "-.", ":"]
        for k, (name, vals) in enumerate(series[:12]):
            step_cdf(ax, vals, label=name, linestyle=styles[(k // 10) % len(styles)], color=f"C{k % 10}")
        plain_log_axis(ax, [x for _, vals in series[:12] for x in vals])  # not 6x10^-1
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("CDF")
        ax.set_title(f"{title}: latency CDF")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, d, "report_latency_cdf.png", written)
    pm = s.get("pingmesh")
    if pm:
        print(f"\nRDMA Pingmesh ({pm['fabric']['probes']} probes): fabric p50 {pm['fabric']['rtt_p50_us']:.2f} us, "
              f"p99 {pm['fabric']['rtt_p99_us']:.2f} us, p99.9 {pm['fabric']['rtt_p999_us']:.2f} us, "
              f"failure rate {pm['fabric']['failure_rate']:.4f}")
        print(f"{'ToR pair':18} {'probes':>7} {'p50 us':>9} {'p99 us':>9} {'p99.9 us':>9} {'fail':>6}")
        for k, v in pm["tor_pairs"].items():
            print(f"{k:18} {v['probes']:7d} {v['rtt_p50_us']:9.2f} {v['rtt_p99_us']:9.2f} {v['rtt_p999_us']:9.2f} "
                  f"{v['failure_rate']:6.3f}")
    for p in (s.get("tcp_pingmesh") or []):
        print(f"TCP pingmesh {p['from']}->{p['to']}: p50 {p['rtt_p50_us']:.1f} us, p99 {p['rtt_p99_us']:.1f} us, "
              f"failures {p['failures']}")
    # FCT slowdown.
    w = s.get("workload")
    if w:
        print(f"\nFCT slowdown over {w['counted']} flows (from {w.get('measured_from_us', 0):.0f} us):")
        print(f"{'bucket':10} {'count':>7} {'avg':>7} {'p50':>7} {'p99':>7} {'p99.9':>7}")
        # Size order (the reference's buckets), then the aggregates; an empty bucket prints '-'.
        order = ["le_4k", "4k_16k", "16k_64k", "64k_256k", "gt_256k", "lt_bdp", "ge_bdp", "all"]
        buckets = w.get("buckets", {})
        keys = [k for k in order if k in buckets] + sorted(k for k in buckets if k not in order)
        for k in keys:
            b = buckets[k]
            if b["count"] == 0:
                print(f"{k:10} {0:7d} {'-':>7} {'-':>7} {'-':>7} {'-':>7}")
            else:
                print(f"{k:10} {b['count']:7d} {b['avg']:7.3f} {b['p50']:7.3f} {b['p99']:7.3f} {b['p999']:7.3f}")
        if w.get("flows_after_duration"):
            print(f"({w['flows_after_duration']} flows of the workload would start at or after the run's "
                  f"duration, so were not started)")
    fct = os.path.join(d, "fct.txt")
    if os.path.exists(fct) and os.path.getsize(fct) > 0:
        sizes, sd = [], []
        for line in open(fct):
            c = line.split()
            if len(c) == 8:
                sizes.append(int(c[4]))
                sd.append(max(1.0, int(c[6]) / max(1, int(c[7]))))
        # The reference's size buckets, as summary.json's: (lo, hi], decimal KB (docs/results.md).
        edges = [0, 4000, 16000, 64000, 256000, 1 << 40]
        names = ["<=4KB", "4-16KB", "16-64KB", "64-256KB", ">256KB"]
        avg, p99 = [], []
        for lo, hi in zip(edges, edges[1:]):
            b = [x for x, z in zip(sd, sizes) if lo < z <= hi]
            avg.append(sum(b) / len(b) if b else 0)
            p99.append(pct(b, 0.99))
        fig, ax = plt.subplots(figsize=(7, 4))
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], avg, width=0.4, label="average")
        ax.bar([x + 0.2 for x in xs], p99, width=0.4, label="p99")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names)
        ax.set_ylabel("FCT slowdown")
        ax.set_title(f"{title}: FCT slowdown by flow size")
        ax.legend()
        ax.grid(True, axis="y", alpha=0.3)
        save(fig, d, "report_fct_slowdown.png", written)
        # Per-flow: the CDF of every flow's slowdown, one step line per size bucket.
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k, (lo, hi, name) in enumerate(zip(edges, edges[1:], names)):
            b = [x for x, z in zip(sd, sizes) if lo < z <= hi]
            if b:
                step_cdf(ax, b, label=f"{name} ({len(b)} flows)", color=f"C{k}")
        plain_log_axis(ax, sd)
        ax.set_xlabel("FCT slowdown (FCT / ideal FCT)")
        ax.set_ylabel("CDF of flows")
        ax.set_title(f"{title}: per-flow FCT slowdown")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, d, "report_fct_cdf.png", written)
    # Switches.
    print(f"\n{'switch':12} {'rx pkts':>10} {'tx pkts':>10} {'XOFF sent':>10} {'XOFF rcvd':>10} {'drops':>8}")
    for name, sw in (s.get("switches") or {}).items():
        rx = sum(p["rx_packets"] for p in sw["ports"])
        tx = sum(p["tx_packets"] for p in sw["ports"])
        xs = sum(v.get("tx_xoff", 0) for p in sw["ports"] for v in p.get("pfc", {}).values())
        xr = sum(v.get("rx_frames", 0) for p in sw["ports"] for v in p.get("pfc", {}).values())
        print(f"{name:12} {rx:10d} {tx:10d} {xs:10d} {xr:10d} {sw['drops_total']:8d}")
    if s.get("events"):
        print("\nfault timeline and observers:")
        for e in s["events"]:
            print(f"  {e}")
    for note in (s.get("notes") or []):
        print(f"note: {note}")
    drops = [(name, r, n) for name, sw in (s.get("switches") or {}).items()
             for r, n in (sw.get("drops") or {}).items() if n]
    if drops:
        print(f"\n{'drops':12} {'reason':28} {'frames':>8}")
        for name, r, n in drops:
            print(f"{name:12} {r:28} {n:8d}")
    spread = {k: v for k, v in (s.get("pause_spread") or {}).items() if v.get("first_paused_at_us", -1) >= 0}
    if spread:
        print("\npause spread (first time each switch was paused by PFC):")
        for name, v in sorted(spread.items(), key=lambda kv: kv[1]["first_paused_at_us"]):
            storm = v.get("first_storm_at_us", -1)
            print(f"  {name:12} {v['first_paused_at_us'] / 1000:9.3f} ms"
                  + (f"  (PFC watchdog storm at {storm / 1000:.3f} ms)" if storm >= 0 else ""))
    for dl in (s.get("deadlocks") or []):
        print(f"\nDEADLOCK formed at {dl['formed_at_us'] / 1000:.3f} ms (detected {dl['detected_at_us'] / 1000:.3f} ms, "
              f"{'persists' if dl.get('persists') else 'cleared'}): " + " -> ".join(dl["cycle"]))
    for h, wd in (s.get("nic_watchdogs") or {}).items():
        print(f"NIC watchdog of {h} fired at {wd['watchdog_fired_at_us'] / 1000:.3f} ms")
    # Port labels name what the port faces: "tor1/p3 -> h7" (summary.json's ports[].peer).
    peer = {}
    for name, sw in (s.get("switches") or {}).items():
        for i, p in enumerate(sw.get("ports") or []):
            if p.get("peer"):
                peer[(name, i)] = p["peer"]

    def port_label(sw, i):
        return f"{sw}/p{i} -> {peer[(sw, i)]}" if (sw, i) in peer else f"{sw}/p{i}"

    ts = os.path.join(d, "timeseries.csv")
    if os.path.exists(ts):
        rows = list(csv.DictReader(open(ts)))
        if rows:
            times = sorted({float(r["time_us"]) for r in rows})
            ports = sorted({(r["switch"], int(r["port"])) for r in rows})
            ti = {t: i for i, t in enumerate(times)}
            pi = {p: i for i, p in enumerate(ports)}
            import numpy as np
            paused = np.zeros((len(ports), len(times)))
            txb = np.zeros((len(ports), len(times)))
            for r in rows:
                k = pi[(r["switch"], int(r["port"]))]
                t = ti[float(r["time_us"])]
                paused[k, t] = 1.0 if int(r["rx_paused_mask"]) else 0.0
                txb[k, t] = float(r["tx_bytes"])
            fig, ax = plt.subplots(figsize=(8, max(3, 0.18 * len(ports))))
            ax.imshow(paused, aspect="auto", interpolation="nearest", cmap="Reds",
                      extent=[times[0] / 1000, times[-1] / 1000, len(ports), 0])
            ax.set_yticks([i + 0.5 for i in range(len(ports))])
            ax.set_yticklabels([port_label(a, b) for a, b in ports], fontsize=6)
            ax.set_xlabel("time (ms)")
            ax.set_title(f"{title}: egress paused by received PFC (red)")
            save(fig, d, "report_pause_heatmap.png", written)
            if len(times) > 1:
                dt = (times[1] - times[0]) * 1e-6
                rate = np.diff(txb, axis=1) * 8 / dt / 1e9
                busiest = np.argsort(-rate.sum(axis=1))[:8]
                fig, ax = plt.subplots(figsize=(8, 4))
                for k in busiest:
                    ax.plot([t / 1000 for t in times[1:]], rate[k], label=port_label(*ports[k]))
                ax.set_xlabel("time (ms)")
                ax.set_ylabel("Gb/s")
                ax.set_title(f"{title}: throughput of the busiest ports")
                ax.legend(fontsize=7)
                ax.grid(True, alpha=0.3)
                save(fig, d, "report_throughput.png", written)
    print()
    for w_ in written:
        print(f"wrote {w_}")
    if not written:
        print("no plots: this folder has no latency samples, no fct.txt and no timeseries.csv "
              "(set output.sample_interval for the pause and throughput plots)")
    if want_html:
        text = tee.kept.getvalue()
        sys.stdout = tee.out
        print(f"wrote {write_html(d, s, text, written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
