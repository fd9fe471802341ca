#!/usr/bin/env bash
# The unit and scenario suites again in an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan/: clang, -O1 with line info), and a 30 s smoke run of every libFuzzer target (the
# `fuzz` suite, built there too; bench/fuzz/run.sh runs one longer with full coverage):
# any invalid access, leak or undefined behaviour fails the test that caused it
# (halt_on_error). scripts/test.sh runs it after the main suites unless ROCEFAB_SANITIZE=0;
# alone: scripts/sanitize.sh [extra meson test args]. Not run here: the live suite (it needs root
# and real time, which the sanitizers distort) and the fidelity slices (7.5 min under ASan for
# the code the scenario suite's 128-host ns-3 slices run too).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-asan/build.ninja ]; then
  CC=clang CXX=clang++ meson setup build-asan --buildtype=plain -Doptimization=1 -Ddebug=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true
fi
# What the three suites need (rocefab: the scenario tests and the frame/switch seeds start it;
# the fuzz targets), not the benchmarks.
mapfile -t targets < <(python3 - <<'PY'
import json, os, subprocess
root = os.path.join(os.getcwd(), "build-asan") + "/"
def introspect(what):
    return json.loads(subprocess.check_output(["meson", "introspect", "build-asan", what]))
out = {"rocefab"}
for t in introspect("--tests"):
    suites = {s.split(":")[-1] for s in t["suite"]}
    # Tests this build made (not those run by an interpreter, e.g. /usr/bin/python3).
    if suites & {"unit", "scenario"} and "fidelity" not in suites and t["cmd"][0].startswith(root):
        out.add(t["cmd"][0].removeprefix(root))
for t in introspect("--targets"):
    if t["name"].startswith("fuzz_") and t["type"] == "executable":
        out.add(t["filename"][0].removeprefix(root))
print("\n".join(sorted(out)))
PY
)
ninja -C build-asan "${targets[@]}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 2 --suite unit \
  --suite scenario --suite fuzz --no-suite fidelity "$@"
