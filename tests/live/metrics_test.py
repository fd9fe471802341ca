#!/usr/bin/python3
"""Live test of `rocefab live --metrics-port` (run/prometheus.h), scraped as Prometheus would.

Starts quickstart-rdma-100m live with `--metrics-port 0 --hold 60s`, reads the endpoint's URL
from the run's output, scrapes it while the RDMA tests run and after, and checks what a
Prometheus server relies on: Prometheus' own text-format parser (python3-prometheus-client)
reads every family with its type, the labels name switches, ports, queues and priorities of
the scenario's fabric, counters never go backwards and carry the traffic, `promtool check
metrics` finds nothing to complain about, and the final summary.json's counters are at least
the last scrape's. Then SIGTERM ends the hold: the run writes its results, exits 0, and the
port is closed. The same with `--processes -q`: the parent's endpoint merges the four switch
processes' (run_processes).
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("ROCEFAB_BIN", os.path.join(ROOT, "build", "rocefab"))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        check(r.status == 200, f"GET {url}: {r.status}")
        ctype = r.headers.get("Content-Type", "")
        check(ctype.startswith("text/plain; version=0.0.4"), f"Content-Type {ctype!r}")
        text = r.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return text, families


def values(families, name):
    """{(labels...): value} of one family's samples (counters: the _total samples)."""
    f = families[name]
    return {tuple(sorted(s.labels.items())): s.value for s in f.samples}


def main():
    if os.geteuid() != 0:
        if os.environ.get("ROCEFAB_SKIP_LIVE") == "1":
            print("skipped: live tests need root (ROCEFAB_SKIP_LIVE=1)")
            sys.exit(77)
        fail("live tests need root (network namespaces, veth): run scripts/test.sh as root, or "
             "set ROCEFAB_SKIP_LIVE=1 to skip them knowingly")
    args = [os.path.join(ROOT, "configs/scenarios/quickstart-rdma-100m.json"),
            "--metrics-port", "0", "--hold", "60s"]
    live(args, "rocefab_metrics_", run)
    # One DPDK process per switch, quiet: the parent serves the four processes as one endpoint.
    live(args + ["--processes", "-q"], "rocefab_metrics_procs_", run_processes)


def live(args, prefix, check_run):
    """Starts `rocefab live ARGS --out <new temp folder>`, hands it to check_run(proc, out), and
    kills it if it is still running afterwards (a failed check)."""
    out = tempfile.mkdtemp(prefix=prefix)
    proc = subprocess.Popen([BIN, "live"] + args + ["--out", out], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        check_run(proc, out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def read_until(proc, pattern, deadline, log):
    """Lines of the run's output until one matches `pattern` (its match), or None at exit."""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            return None
        log.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    return None


def run(proc, out):
    log = []
    m = read_until(proc, r"metrics: (http://127\.0\.0\.1:(\d+)/metrics)", time.monotonic() + 120, log)
    check(m is not None, "no metrics URL printed:\n" + "".join(log))
    url, port = m.group(1), int(m.group(2))
    check(port > 0, f"port {port}")
    first_text, first = scrape(url)

    # Scrape while the run goes on, until its RDMA tests have carried traffic over the spines
    # and the run's time has passed the scenario's duration (200 ms).
    deadline = time.monotonic() + 120
    scrapes = 1
    while True:
        text, fams = scrape(url)
        scrapes += 1
        up = sum(v for k, v in values(fams, "rocefab_port_transmitted_bytes").items()
                 if dict(k)["switch"].startswith("spine"))
        t = values(fams, "rocefab_run_time_seconds")[()]
        if up > 1_000_000 and t > 0.3:
            break
        check(time.monotonic() < deadline, f"no traffic seen in 120 s: {up} bytes via the spines, t {t}")
        time.sleep(0.05)  # scrape about as often as a fast Prometheus job; the run is observed

    # Families and types as Prometheus' parser reads them.
    expect = {
        "rocefab_run_time_seconds": "gauge", "rocefab_mbufs_in_use": "gauge",
        "rocefab_port_received_packets": "counter", "rocefab_port_transmitted_bytes": "counter",
        "rocefab_queue_transmitted_packets": "counter", "rocefab_queue_ecn_marked_packets": "counter",
        "rocefab_queue_bytes": "gauge", "rocefab_queue_watermark_bytes": "gauge",
        "rocefab_pfc_xoff_sent_frames": "counter", "rocefab_pfc_received_frames": "counter",
        "rocefab_pfc_paused": "gauge", "rocefab_pfc_watchdog_storm": "gauge",
        "rocefab_pg_xoff": "gauge", "rocefab_pg_headroom_bytes": "gauge",
        "rocefab_pg_watermark_bytes": "gauge", "rocefab_switch_dropped_packets": "counter",
        "rocefab_switch_buffer_used_bytes": "gauge", "rocefab_pfc_watchdog_storms": "counter",
    }
    for name, typ in expect.items():
        check(name in fams, f"family {name} missing; have {sorted(fams)}")
        check(fams[name].type == typ, f"{name}: type {fams[name].type}, expected {typ}")
    # Labels: the fabric's 4 switches, 12 ports named <switch>/pN, 8 queues each, PFC on the
    # lossless priorities only.
    ports = values(fams, "rocefab_port_transmitted_bytes")
    switches = {dict(k)["switch"] for k in ports}
    check(switches == {"tor0", "tor1", "spine0", "spine1"}, f"switches {switches}")
    check(len(ports) == 12, f"{len(ports)} ports")
    for k in ports:
        d = dict(k)
        check(re.fullmatch(re.escape(d["switch"]) + r"/p\d+", d["port"]), f"port label {d}")
    queues = values(fams, "rocefab_queue_transmitted_packets")
    check(len(queues) == 12 * 8, f"{len(queues)} queue samples")
    prios = {dict(k)["priority"] for k in values(fams, "rocefab_pfc_paused")}
    check(prios == {"3", "4"}, f"PFC priorities {prios} (the roce profile's lossless 3 and 4)")
    reasons = {dict(k)["reason"] for k in values(fams, "rocefab_switch_dropped_packets")}
    check("lossless_headroom_exhausted" in reasons, f"drop reasons {sorted(reasons)}")
    # Counters never go backwards between scrapes, and the traffic is in them.
    never_backwards(first, fams, ("rocefab_port_received_packets", "rocefab_port_transmitted_bytes",
                                  "rocefab_queue_transmitted_packets"))
    check(sum(values(fams, "rocefab_port_transmitted_bytes").values()) >
          sum(values(first, "rocefab_port_transmitted_bytes").values()), "no bytes between scrapes")

    # The Grafana dashboard in docs/ queries only metrics the endpoint serves.
    dash = json.load(open(os.path.join(ROOT, "docs", "grafana-dashboard.json")))
    served = set(re.findall(r"^(rocefab_\w+?)(?:\{| )", text, re.M))
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs.append(dash["templating"]["list"][0]["query"])
    for e in exprs:
        for name in re.findall(r"rocefab_\w+", e):
            check(name in served, f"docs/grafana-dashboard.json queries {name}, which is not served")

    promtool_clean(text, "one process")
    # SIGTERM ends the hold: results written, exit 0, the endpoint gone.
    sigterm_ends(proc, log, "one process")
    summary = json.load(open(os.path.join(out, "summary.json")))
    last_tx = values(fams, "rocefab_port_transmitted_packets")
    for sw_name, sw in summary["switches"].items():
        for p in sw["ports"]:
            key = tuple(sorted({"switch": sw_name, "port": p["name"]}.items()))
            check(p["tx_packets"] >= last_tx[key],
                  f"{p['name']}: summary tx_packets {p['tx_packets']} < last scrape {last_tx[key]}")
    endpoint_gone(url)
    print(f"ok: {scrapes} scrapes of {url}, {len(fams)} families, {len(text.splitlines())} lines; "
          f"promtool clean; summary.json agrees")


def run_processes(proc, out):
    """`--processes --metrics-port 0 -q`: the URL is printed although quiet; one scrape of the
    parent shows all four switch processes, each family once (Prometheus' parser and promtool
    read it), every process up; counters grow; SIGTERM ends it and the endpoint."""
    log = []
    m = read_until(proc, r"metrics: (http://127\.0\.0\.1:(\d+)/metrics)", time.monotonic() + 120, log)
    check(m is not None, "--processes -q: no metrics URL printed:\n" + "".join(log))
    url = m.group(1)
    first_text, first = scrape(url)
    deadline = time.monotonic() + 120
    while True:
        text, fams = scrape(url)
        up = sum(v for k, v in values(fams, "rocefab_port_transmitted_bytes").items()
                 if dict(k)["switch"].startswith("spine"))
        times = values(fams, "rocefab_run_time_seconds")
        if up > 1_000_000 and min(times.values()) > 0.3:
            break
        check(time.monotonic() < deadline, f"--processes: no traffic in 120 s: {up} bytes, {times}")
        time.sleep(0.05)
    nodes = values(fams, "rocefab_node_up")
    check(nodes == {(("node", n),): 1.0 for n in ("tor0", "tor1", "spine0", "spine1")},
          f"rocefab_node_up {nodes}")
    check({dict(k)["node"] for k in values(fams, "rocefab_mbufs_in_use")} ==
          {"tor0", "tor1", "spine0", "spine1"}, "each process's own gauges, labelled by node")
    ports = values(fams, "rocefab_port_transmitted_bytes")
    check({dict(k)["switch"] for k in ports} == {"tor0", "tor1", "spine0", "spine1"}, str(ports))
    check(len(ports) == 12, f"{len(ports)} ports")
    check(len(values(fams, "rocefab_queue_transmitted_packets")) == 12 * 8, "queues")
    families = re.findall(r"^# TYPE (\S+)", text, re.M)
    check(len(families) == len(set(families)), "a family's TYPE given twice")
    never_backwards(first, fams, ("rocefab_port_received_packets", "rocefab_port_transmitted_bytes"))
    promtool_clean(text, "--processes")
    sigterm_ends(proc, log, "--processes")
    endpoint_gone(url)
    print(f"ok: --processes: {url} merges 4 switch processes, {len(fams)} families, promtool clean")


def never_backwards(first, fams, names):
    """Counters never go backwards between two scrapes."""
    for name in names:
        a, b = values(first, name), values(fams, name)
        for k, v in a.items():
            check(b[k] >= v, f"{name}{dict(k)} went back from {v} to {b[k]}")


def promtool_clean(text, what):
    """promtool (Prometheus' own checker): format and naming conventions."""
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    check(lint.returncode == 0, f"{what}: promtool check metrics: {lint.stdout}{lint.stderr}")


def sigterm_ends(proc, log, what):
    """SIGTERM ends a held run, which exits 0."""
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=120)
    log.append(rest)
    check(proc.returncode == 0, f"{what}: exit {proc.returncode} after SIGTERM:\n" + "".join(log)[-3000:])


def endpoint_gone(url):
    """The endpoint closes with the run."""
    try:
        urllib.request.urlopen(url, timeout=5)
        fail(f"{url} still answers after the run ended")
    except OSError:
        pass


if __name__ == "__main__":
    main()
