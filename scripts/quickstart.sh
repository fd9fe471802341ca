#!/usr/bin/env bash
# Sets up the machine, builds rocefab and runs the built-in default scenario
# (configs/scenarios/quickstart.json: 2 spines, 2 ToRs, 4 Linux hosts in namespaces) on the live
# DPDK fabric. As root it runs `rocefab live`; otherwise it runs the same scenario in virtual time
# with `rocefab sim` and says so. Results go to results/quickstart-<runner>/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
if [ "$(id -u)" -eq 0 ]; then
  build/rocefab live configs/scenarios/quickstart.json --out results/quickstart-live
else
  echo "quickstart: not root, so running the scenario in virtual time (rocefab sim); run as root for the live fabric"
  build/rocefab sim configs/scenarios/quickstart.json --out results/quickstart-sim
fi
