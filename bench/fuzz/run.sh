#!/bin/bash
# Builds a libFuzzer target (build-fuzz/: clang, ASan + UBSan, libFuzzer's coverage and
# comparison tracing in every file, so that long runs find their way into the code) and runs it.
#   bench/fuzz/run.sh --list                 the targets
#   bench/fuzz/run.sh TARGET SECONDS [ARGS]  e.g. bench/fuzz/run.sh frame 60
# ROCEFAB_FUZZ_BUILD=DIR: the target is built in DIR already: the `fuzz` meson suite of the
# sanitizer build (scripts/sanitize.sh, CI's 30 s smoke run of each target) sets it; there only
# the target's own file carries coverage, so the smoke run finds less but the tests stay fast.
# Seeds: frame and switch from the pcaps in SEED_PCAPS (default: the captures a sim run of
# configs/scenarios/quickstart-rdma-1g.json with two captured ports writes), scenario from
# configs/scenarios/**/*.json, flow_trace and rnic and lb from records written below. The corpus
# grows in BUILD/corpus/TARGET; crashes land in BUILD/crashes/TARGET (each one becomes a unit
# test). The last lines are libFuzzer's final stats (execs, coverage, corpus).
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGETS=(frame switch rnic lb scenario flow_trace)
if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${TARGETS[@]}"
  exit 0
fi
target=${1:?usage: bench/fuzz/run.sh TARGET SECONDS (bench/fuzz/run.sh --list)}
seconds=${2:-60}
shift 2 || true
[[ " ${TARGETS[*]} " == *" $target "* ]] || { echo "unknown target $target (--list)" >&2; exit 2; }
build=${ROCEFAB_FUZZ_BUILD:-build-fuzz}
if [ -z "${ROCEFAB_FUZZ_BUILD:-}" ]; then
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-fuzz --buildtype=plain -Doptimization=1 -Ddebug=true \
      -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true \
      -Dcpp_args=-fsanitize=fuzzer-no-link -Dc_args=-fsanitize=fuzzer-no-link
  fi
  ninja -C "$build" "bench/fuzz/fuzz_$target"
fi
corpus=$build/corpus/$target
crashes=$build/crashes/$target
mkdir -p "$corpus" "$crashes"
if [ -z "$(ls -A "$corpus")" ]; then
  case $target in
    frame|switch)
      # Real frames: every packet of the seed captures, one file each (the switch target's
      # records: port 0, length, bytes).
      seeds=${SEED_PCAPS:-}
      if [ -z "$seeds" ]; then
        python3 - "$build/seed-$target.json" <<'PY'
import json, sys
s = json.load(open("configs/scenarios/quickstart-rdma-1g.json"))
s["duration"] = "2ms"
s.setdefault("output", {}).update(capture=["tor0/p2", "tor1/p0"], capture_format="pcap")
json.dump(s, open(sys.argv[1], "w"))
PY
        [ -n "${ROCEFAB_FUZZ_BUILD:-}" ] || ninja -C "$build" rocefab
        "$build/rocefab" sim "$build/seed-$target.json" --out "$build/seed-$target" -q
        seeds="$build/seed-$target/tor0_p2.pcap $build/seed-$target/tor1_p0.pcap"
      fi
      python3 - "$target" "$corpus" $seeds <<'PY'
import struct, sys
target, corpus, pcaps = sys.argv[1], sys.argv[2], sys.argv[3:]
n = 0
for f in pcaps:
    d = open(f, "rb").read()
    off = 24
    while off + 16 <= len(d) and n < 2000:
        incl = struct.unpack_from("<I", d, off + 8)[0]
        pkt = d[off + 16: off + 16 + incl]
        off += 16 + incl
        data = pkt if target == "frame" else bytes([n % 2]) + struct.pack(">H", len(pkt)) + pkt
        open(f"{corpus}/seed{n:05d}", "wb").write(data)
        n += 1
PY
      ;;
    scenario)
      i=0
      for f in configs/scenarios/*.json configs/scenarios/field/*.json; do cp "$f" "$corpus/seed$i.json"; i=$((i + 1)); done
      ;;
    rnic)
      # A WRITE_ONLY (opcode 0x0a) of 64 bytes from h0 with the PSN h1 expects (100), and a
      # READ_REQUEST (0x0c) of 4 KB.
      python3 - "$corpus" <<'PY'
import struct, sys
def rec(op, flags, psn, va, rkey, dma_len, syndrome=0, msn=0):
    return bytes([op, flags]) + psn.to_bytes(3, "big") + struct.pack(">QII", va, rkey, dma_len) + \
        bytes([syndrome]) + msn.to_bytes(3, "big")[1:] + b"\0"
open(sys.argv[1] + "/seed0", "wb").write(rec(0x0A, 0, 100, 0x10000000, 7, 64) + bytes(range(64)))
open(sys.argv[1] + "/seed1", "wb").write(rec(0x0C, 0, 100, 0x10000000, 7, 4096))
PY
      ;;
    lb)
      # ConWeave (first byte 0) and CONGA (1): a tagged RoCE WRITE_MIDDLE (0x07) on each ToR's
      # first uplink, a TAIL-flagged one, and a ConWeave RTT_REPLY control packet.
      python3 - "$corpus" <<'PY'
import sys
def rec(sw, port, kind, frm, tag8, tag16, op, qpn, psn, ln):
    return bytes([sw, port, kind, frm, tag8]) + tag16.to_bytes(2, "big") + bytes([op]) + \
        qpn.to_bytes(3, "big") + psn.to_bytes(3, "big") + ln.to_bytes(2, "big")
for scheme in (0, 1):
    d = bytes([scheme])
    d += rec(0, 1, 0, 0, 0x80, 0x1234, 0x07, 0, 100, 64) + bytes(64)
    d += rec(1, 1, 0, 0, 0xA0, 0x0042, 0x07, 0, 101, 64) + bytes(64)
    d += bytes([1, 1, 1, 1]) + bytes([1, 0, 0xC0, 0x00, 0x12, 0xB7, 0, 1]) + bytes(4)
    open(f"{sys.argv[1]}/seed{scheme}", "wb").write(d)
PY
      ;;
    flow_trace)
      printf '3\n0 1 3 1000 2.000001\n2 3 3 500000 2.0001\n4 0 3 64 2.5\n' > "$corpus/seed0"
      ;;
  esac
fi
exec "$build/bench/fuzz/fuzz_$target" "$corpus" -artifact_prefix="$crashes/" \
  -max_total_time="$seconds" -print_final_stats=1 "$@"
