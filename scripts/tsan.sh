#!/usr/bin/env bash
# The runners' partitions under ThreadSanitizer (build-tsan/: GCC -fsanitize=thread, -O1 with
# line info): the `threads` suite of tests/meson.build, i.e. the sim runner's and the live
# runner's partitions on their own threads and whole fabrics (switches, NICs, ConWeave, the
# fault timeline and deadlock detector, captures) run on two threads and compared with one. Any
# data race fails the test that caused it (halt_on_error); the only suppressions are DPDK's
# ring internals (scripts/tsan.supp, why: common/sanitizer.h). scripts/test.sh runs it after the
# main suites unless ROCEFAB_SANITIZE=0; alone: scripts/tsan.sh [extra meson test args].
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-tsan/build.ninja ]; then
  meson setup build-tsan --buildtype=plain -Doptimization=1 -Ddebug=true -Db_sanitize=thread \
    -Db_lundef=false
fi
# Only what the suite runs (not rocefab, the benchmarks or the other tests).
mapfile -t targets < <(meson introspect build-tsan --tests | python3 -c '
import json, os, sys
root = os.path.join(os.getcwd(), "build-tsan") + "/"
for t in json.load(sys.stdin):
    if "threads" in [s.split(":")[-1] for s in t["suite"]]:
        print(t["cmd"][0].removeprefix(root))' | sort -u)
ninja -C build-tsan "${targets[@]}"
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}
meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes 1 --suite threads "$@"
