#!/usr/bin/env bash
# Sets up the machine (packages, hugepages), builds, and runs every test suite: unit, scenario
# (sim runner), mpi (`mpirun -np N rocefab sim` against one process) and live (namespaces + DPDK; needs root: without root this script says so and sets
# ROCEFAB_SKIP_LIVE=1, so each live test skips with that reason instead of failing); then the unit
# and scenario suites again under ASan + UBSan with a 30 s smoke run of each fuzz target
# (scripts/sanitize.sh), and the runners' partitions on their own threads under ThreadSanitizer
# (scripts/tsan.sh); ROCEFAB_SANITIZE=0 skips both.
# Usage: scripts/test.sh [extra meson test args for the main run]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
if [ "$(id -u)" -ne 0 ]; then
  echo "test.sh: not root: the live tests (namespaces, veth, raw sockets) will be skipped" >&2
  export ROCEFAB_SKIP_LIVE=1
fi
# The `threads` suite is for the TSan build (its tests are in unit and scenario already).
meson test -C build --print-errorlogs --num-processes 2 --no-suite threads "$@"
if [ "${ROCEFAB_SANITIZE:-1}" != 0 ]; then
  rc=0
  scripts/sanitize.sh || rc=1
  scripts/tsan.sh || rc=1
  exit $rc
fi
