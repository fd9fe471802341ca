#!/usr/bin/env bash
# Sets up the machine (packages, hugepages), builds, and runs every test suite: unit, scenario
# (sim runner) and live (namespaces + DPDK; needs root, skipped with a message otherwise).
# Usage: scripts/test.sh [extra meson test args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
meson test -C build --print-errorlogs --num-processes 2 "$@"
