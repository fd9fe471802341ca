#!/usr/bin/python3
"""TCP Pingmesh probe tool run inside rocefab's namespace hosts (live runner).

  tcp_pingmesh.py serve PORT
      echo server: answers every SIZE-byte request with the same bytes.
  tcp_pingmesh.py probe PORT INTERVAL_S COUNT SIZE DST [DST ...]
      one persistent connection per destination; probe k is due at start + k x INTERVAL_S (open
      loop): its RTT is measured from that due time to the echo's arrival, so a slow probe delays
      the ones behind it on the wall clock but not in the figures (no coordinated omission).
      Prints one JSON object: {"DST": {"rtt_us": [...], "failures": N}, ...}.
"""
import json
import selectors
import socket
import sys
import time


def serve(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is srv:
                c, _ = srv.accept()
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sel.register(c, selectors.EVENT_READ)
            else:
                data = key.fileobj.recv(65536)
                if not data:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                else:
                    key.fileobj.sendall(data)


def probe(port, interval, count, size, dsts):
    conns, res = {}, {}
    for d in dsts:
        res[d] = {"rtt_us": [], "failures": 0}
        for _ in range(200):  # the servers start in parallel: retry briefly
            try:
                c = socket.create_connection((d, port), timeout=1)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                c.settimeout(1.0)
                conns[d] = c
                break
            except OSError:
                time.sleep(0.01)
        else:
            res[d]["failures"] = count
    payload = b"x" * size
    sel = selectors.DefaultSelector()
    for d, c in conns.items():
        sel.register(c, selectors.EVENT_READ, d)
    start = time.monotonic() + 0.01
    for k in range(count):
        due = start + k * interval
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        pending = {}
        for d, c in conns.items():  # all probes of this round leave together
            try:
                c.sendall(payload)
                pending[d] = 0
            except OSError:
                res[d]["failures"] += 1
        deadline = time.monotonic() + 1.0
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                d = key.data
                if d not in pending:
                    key.fileobj.recv(65536)
                    continue
                chunk = key.fileobj.recv(size - pending[d])
                if not chunk:
                    res[d]["failures"] += 1
                    del pending[d]
                    continue
                pending[d] += len(chunk)
                if pending[d] >= size:
                    res[d]["rtt_us"].append((time.monotonic() - due) * 1e6)
                    del pending[d]
        for d in pending:
            res[d]["failures"] += 1
    print(json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) >= 7 and sys.argv[1] == "probe":
        probe(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:])
    else:
        print(__doc__)
        sys.exit(2)
