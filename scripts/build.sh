#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh: packages, hugepages) and builds rocefab into build/
# (release). Idempotent; called by scripts/quickstart.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
ninja -C build
