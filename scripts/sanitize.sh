#!/usr/bin/env bash
# The unit and scenario suites again in an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan/, -O1 with line info): any invalid access, leak or undefined behaviour fails the
# test that caused it (halt_on_error). scripts/test.sh runs it after the main suites unless
# ROCEFAB_SANITIZE=0; alone: scripts/sanitize.sh [extra meson test args].
# The live suite is not run here: it needs root and real time, which the sanitizers distort.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-asan/build.ninja ]; then
  meson setup build-asan --buildtype=plain -Doptimization=1 -Ddebug=true \
    -Db_sanitize=address,undefined -Db_lundef=false
fi
# What the two suites need (rocefab: the scenario tests start it); not the benchmarks.
targets=(rocefab)
for t in $(meson introspect build-asan --tests | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if set(t["suite"]) & {"rocefab:unit", "rocefab:scenario", "unit", "scenario"}:
        print(t["cmd"][0])'); do
  targets+=("${t#"$PWD/build-asan/"}")
done
ninja -C build-asan "${targets[@]}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite unit \
  --suite scenario "$@"
