#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh: packages, hugepages) and builds rocefab into build/
# (release). Idempotent; called by scripts/quickstart.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  # CI builds with warnings as errors (a fresh build on Debian 12's GCC prints none).
  meson setup build --buildtype=release ${CI:+-Dwerror=true}
fi
ninja -C build
