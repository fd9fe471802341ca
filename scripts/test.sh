#!/usr/bin/env bash
# Sets up the machine (packages, hugepages), builds, and runs every test suite: unit, scenario
# (sim runner) and live (namespaces + DPDK; needs root: without root this script says so and sets
# ROCEFAB_SKIP_LIVE=1, so each live test skips with that reason instead of failing); then the unit
# and scenario suites again under ASan + UBSan (scripts/sanitize.sh; ROCEFAB_SANITIZE=0 skips it).
# Usage: scripts/test.sh [extra meson test args for the main run]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
if [ "$(id -u)" -ne 0 ]; then
  echo "test.sh: not root: the live tests (namespaces, veth, raw sockets) will be skipped" >&2
  export ROCEFAB_SKIP_LIVE=1
fi
meson test -C build --print-errorlogs --num-processes 2 "$@"
if [ "${ROCEFAB_SANITIZE:-1}" != 0 ]; then
  scripts/sanitize.sh
fi
