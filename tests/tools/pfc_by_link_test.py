#!/usr/bin/python3
"""bench/fidelity/pfc_by_link.py: the reference's device numbering and its committed PFC log.

1. A small topology in the reference's format: a node's k-th link is its device k, a frame a
   device receives was sent by the link's other end, and switches linked to servers are ToRs.
2. Every line of each committed reference PFC log maps to a device of the 128-host leaf-spine,
   and the pauses and resumes by direction add up to the totals traces.json records for the run.
Usage: pfc_by_link_test.py SOURCE_ROOT
"""
import json
import os
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
FIDELITY = os.path.join(ROOT, "bench", "fidelity")
sys.path.insert(0, FIDELITY)
import pfc_by_link  # noqa: E402


class PfcByLinkTest(unittest.TestCase):
    def test_devices_are_numbered_by_link_order(self):
        # 2 servers (0, 1) on ToR 2, ToR 2 to spine 3; device 0 of every node is its loopback.
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as topo:
            topo.write("4 2 3\n2 3\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n"
                       "2 3 100Gbps 1000ns 0\n")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as log:
            # ToR 2 pauses server 1; spine 3 pauses ToR 2 twice and resumes it; ToR 2 pauses 3.
            log.write("2000000000 1 0 1 1\n2000000100 2 1 3 1\n2000000200 2 1 3 1\n"
                      "2000000300 2 1 3 0\n2000000400 3 1 1 1\n")
        try:
            peer, kind, name = pfc_by_link.reference_links(topo.name)
            self.assertEqual(peer[(2, 1)], 0)
            self.assertEqual(peer[(2, 2)], 1)
            self.assertEqual(peer[(2, 3)], 3)
            self.assertEqual(peer[(3, 1)], 2)
            self.assertEqual([kind[n] for n in range(4)], ["host", "host", "tor", "spine"])
            self.assertEqual([name[n] for n in range(4)], ["h0", "h1", "tor0", "spine0"])
            by_link = pfc_by_link.count_reference(log.name, peer, kind, name)
            self.assertEqual(by_link, {("tor", "host", "tor0->h1"): [1, 0],
                                       ("spine", "tor", "spine0->tor0"): [2, 1],
                                       ("tor", "spine", "tor0->spine0"): [1, 0]})
            d = pfc_by_link.by_direction(by_link)
            self.assertEqual(d["spine->tor"], {"pause": 2, "resume": 1, "ports": 1, "max_port": 3})
        finally:
            os.unlink(topo.name)
            os.unlink(log.name)

    def test_committed_logs_add_up_to_the_recorded_totals(self):
        manifest = json.load(open(os.path.join(FIDELITY, "traces.json")))
        logs = 0
        for t in manifest["traces"]:
            for scheme, r in t["reference"].items():
                if "pfc_log" not in r:
                    continue
                logs += 1
                peer, kind, name = pfc_by_link.reference_links(
                    os.path.join(FIDELITY, t.get("ns3_topology",
                                                 "topologies/leaf_spine_128_100G_OS2.txt")))
                d = pfc_by_link.by_direction(pfc_by_link.count_reference(
                    os.path.join(FIDELITY, r["pfc_log"]), peer, kind, name))
                self.assertEqual(sum(v["pause"] for v in d.values()),
                                 r["pfc_frames_received"]["pause"], f"{t['name']} {scheme}")
                self.assertEqual(sum(v["resume"] for v in d.values()),
                                 r["pfc_frames_received"]["resume"], f"{t['name']} {scheme}")
        self.assertGreater(logs, 0, "no committed reference PFC log")


if __name__ == "__main__":
    unittest.main()
