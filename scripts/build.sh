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
# The README's examples call `rocefab`: link the build onto PATH (root), else say where it is.
if [ "$(id -u)" = 0 ] && [ -d /usr/local/bin ] && [ -w /usr/local/bin ]; then
  ln -sfn "$PWD/build/rocefab" /usr/local/bin/rocefab
else
  echo "note: not root: the binary is $PWD/build/rocefab (the README's \`rocefab\`)" >&2
fi
