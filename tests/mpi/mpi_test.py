#!/usr/bin/env python3
"""MPI ranks as sim partitions (#19): `mpirun -np N rocefab sim` gives the results one process
gives, byte for byte (fct.txt, flows.csv, pings.csv, summary.json with `sim_events` aside).

Cases: the first millisecond of the shared anchor trace (9,783 flows, 128 hosts) with a fault
timeline and the deadlock detector, with ECMP on 2 ranks and with ConWeave on 2 ranks x 2
threads; the small ARP-flood deadlock field case (a
fault timeline, and the deadlock detector finding the cycle) on 2 ranks; what a distributed
run refuses, with every rank ending (no rank left waiting in a collective).

usage: mpi_test.py ROCEFAB SOURCE_DIR   (exit 77: skipped, no mpirun or built without MPI)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROCEFAB, SRC = sys.argv[1], sys.argv[2]
MPIRUN = shutil.which("mpirun")
# The anchor trace's first millisecond, as tests/scenario/ns3_import_test.cc runs it.
SLICE = ["--set", f"traffic.0.file={SRC}/tests/data/anchor_first_1ms.txt.xz",
         "--set", "traffic.0.until=1ms", "--set", "traffic.0.measure_from=0ns",
         "--set", "duration=5ms"]
# With a fault timeline whose targets run on both ranks (a spine uplink of tor0 down, h100's NIC
# stalled, h20's link losing one frame in 64) and the deadlock detector on, as #19 asks.
FAULTS = ["--set", 'faults=[{"kind":"link_down","a":"tor0","b":"spine0","at":"300us",'
          '"duration":"400us"},{"kind":"nic_stall","host":"h100","at":"200us","duration":"300us"},'
          '{"kind":"link_loss","from":"h20","to":"tor1","every":64,"at":"0us","duration":"2ms"}]',
          "--set", "detect_deadlocks=true"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def mpirun(n, args, timeout=300):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(n), ROCEFAB, "sim"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def one(args, timeout=300):
    return subprocess.run([ROCEFAB, "sim"] + args, capture_output=True, text=True, timeout=timeout)


def results(d):
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


def same_run(name, scenario, extra, ranks, threads, tmp):
    """Runs `scenario` on one process and on `ranks` MPI ranks; returns the single summary."""
    a, b = os.path.join(tmp, name + "-one"), os.path.join(tmp, name + "-mpi")
    r1 = one([scenario, "--out", a] + extra)
    check(r1.returncode == 0, f"{name}: one process exits 0 ({r1.stderr.strip()[-300:]})")
    r2 = mpirun(ranks, [scenario, "--out", b, "--threads", str(threads)] + extra)
    check(r2.returncode == 0, f"{name}: {ranks} ranks exit 0 ({r2.stderr.strip()[-300:]})")
    if r1.returncode or r2.returncode:
        return None
    check(f"{ranks} MPI ranks, {ranks * threads} partitions" in r2.stdout,
          f"{name}: rank 0 reports {ranks} ranks and {ranks * threads} partitions")
    # Rank 0's progress lines count every rank's events: the same total as one process.
    drained = [re.search(r"drained to \S+, (\d+) events in all", r.stdout) for r in (r1, r2)]
    check(all(drained) and drained[0].group(1) == drained[1].group(1),
          f"{name}: rank 0 reports all ranks' events, as many as one process "
          f"({[d.group(1) if d else None for d in drained]})")
    rates = re.findall(r"M events/s, by rank ((?:[\d.]+/?)+) M events/s", r2.stdout)
    check(bool(rates) and all(len(x.split("/")) == ranks for x in rates),
          f"{name}: the progress lines give each of the {ranks} ranks' events per second "
          f"({rates[-1] if rates else None})")
    # A flow workload's progress lines count the flows finished on every rank (each finishes on
    # its source's rank): the same counts as one process's at the duration and after the drain
    # (the lines before depend on wall time), and all of them after the drain.
    flows = [re.findall(r"flows (\d+)/(\d+) finished", r.stdout)[-2:] for r in (r1, r2)]
    if flows[0]:
        check(flows[0] == flows[1] and flows[0][-1][0] == flows[0][-1][1],
              f"{name}: the progress lines count every rank's finished flows, all of them after "
              f"the drain ({flows[0]} / {flows[1]})")
    fa, fb = results(a), results(b)
    check(sorted(fa) == sorted(fb), f"{name}: the same files ({sorted(fa)} / {sorted(fb)})")
    for f in sorted(set(fa) & set(fb) - {"summary.json"}):
        check(fa[f] == fb[f], f"{name}: {f} identical ({len(fa[f])} bytes)")
    sa, sb = json.loads(fa["summary.json"]), json.loads(fb["summary.json"])
    ea, eb = sa.pop("sim_events"), sb.pop("sim_events")
    diff = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
    check(not diff, f"{name}: summary.json identical but for sim_events (differs: {diff})")
    check(json.dumps(sa, sort_keys=True) == json.dumps(sb, sort_keys=True),
          f"{name}: summary.json text identical")
    for k in ("arrive", "tx_free", "timer"):
        check(ea[k] == eb[k], f"{name}: sim_events.{k} summed over the ranks {eb[k]} = {ea[k]}")
    check(eb["ranks"] == ranks and eb["partitions"] == ranks * threads and eb["windows"] > 0,
          f"{name}: sim_events ranks {eb.get('ranks')}, partitions {eb['partitions']}, "
          f"windows {eb['windows']}")
    check(eb["cross_rank_frames"] > 0,
          f"{name}: frames crossed ranks ({eb['cross_rank_frames']})")
    return sa


def main():
    if MPIRUN is None:
        print("skip: no mpirun (apt-get install openmpi-bin libopenmpi-dev)")
        return 77
    probe = one([os.path.join(tempfile.gettempdir(), "no-such-scenario.json"), "--mpi", "-q"])
    if "built without MPI" in probe.stderr:
        print("skip: this rocefab was built without MPI")
        return 77
    tmp = tempfile.mkdtemp(prefix="rocefab-mpi-")
    try:
        scen = f"{SRC}/configs/scenarios"
        s = same_run("ecmp", f"{scen}/ns3-alistorage-128h.json", SLICE + FAULTS, 2, 1, tmp)
        if s:
            check(len(s["events"]) == 6, f"ecmp: the fault timeline ran ({len(s['events'])} events)")
            w = s["workload"]
            check(w["flows"] == 9783 and w["finished"] == 9783,
                  f"ecmp: every flow of the slice finished ({w['finished']}/{w['flows']})")
            check(s["conservation"]["balanced"] and s["conservation"]["nodes"] == 144,
                  "ecmp: every frame of 144 nodes accounted for")
        s = same_run("conweave", f"{scen}/ns3-alistorage-128h-conweave.json", SLICE + FAULTS, 2,
                     2, tmp)
        if s:
            check(s["workload"]["finished"] == 9783, "conweave: every flow finished")
            check(len(s["events"]) == 6, f"conweave: the fault timeline ran")
        s = same_run("arp-flood", f"{scen}/field/arp-flood-small.json", [], 2, 1, tmp)
        if s:
            check(len(s["deadlocks"]) == 1 and len(s["events"]) >= 2,
                  f"arp-flood: the fault timeline ran and the deadlock was found "
                  f"({len(s['deadlocks'])} deadlock(s), {len(s['events'])} events)")
        # Refused: each rank says why and every rank ends.
        for name, scenario, extra, why in [
            ("one ToR", f"{scen}/incast-dcqcn.json", [],
             "2 ranks need at least 2 ToRs (one partition each); the fabric has 1"),
            ("timeseries", f"{scen}/ns3-alistorage-128h.json",
             SLICE + ["--set", "output.sample_interval=10us"],
             "output.sample_interval: timeseries.csv is not written by a distributed (MPI) run"),
        ]:
            out = os.path.join(tmp, "refused")
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, "capture.pcapng"), "w") as f:
                f.write("an earlier run's file")
            r = mpirun(2, [scenario, "-q", "--out", out] + extra, timeout=120)
            check(r.returncode != 0 and why in r.stderr,
                  f"refused ({name}): exit {r.returncode}, says '{why}'")
            check(os.listdir(out) == ["capture.pcapng"] and
                  open(os.path.join(out, "capture.pcapng")).read() == "an earlier run's file",
                  f"refused ({name}): the results folder is left as it was ({os.listdir(out)})")
        # Ranks that read different scenarios (MPMD: another seed on rank 1) stop before they run.
        q = f"{scen}/quickstart.json"
        r = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", ROCEFAB,
                            "sim", q, "-q", ":", "-np", "1", ROCEFAB, "sim", q, "-q", "--set",
                            "seed=7"], capture_output=True, text=True, timeout=120)
        check(r.returncode != 0 and "the MPI ranks were started differently" in r.stderr,
              f"ranks with different scenarios refuse to run (exit {r.returncode})")
        # Rank 0 alone fails (its results folder cannot be made) while rank 1 is set to go on:
        # rank 0 ends the run for every rank (MPI_Abort) instead of leaving rank 1 waiting.
        r = mpirun(2, [f"{scen}/quickstart.json", "-q", "--out", "/proc/no-such-dir/x"],
                   timeout=120)
        check(r.returncode != 0 and "/proc/no-such-dir/x" in r.stderr,
              f"rank 0 alone fails: every rank ends (exit {r.returncode})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
