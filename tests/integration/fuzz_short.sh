#!/usr/bin/env bash
# The short fuzz pass of `make test`: every libFuzzer target (tests/fuzz/,
# built by `make fuzz-build`, which make test runs) for FUZZ_SHORT_SECONDS
# (default 3) over its committed seeds, so a parser change that crashes, leaks
# or hangs on an input the seeds reach fails CI. `make fuzz` is the long run.
set -u
cd "$(dirname "$0")/../.."
shopt -s nullglob
built=(build/fuzz/fuzz_*)
srcs=(tests/fuzz/fuzz_*.c)
if ((${#built[@]} == 0)); then
    echo "skip: no fuzz targets built (run make fuzz-build; it needs clang and libclang-rt-14-dev)"
    exit 77
fi
for s in "${srcs[@]}"; do
    n=$(basename "$s" .c)
    [[ -x build/fuzz/$n ]] || { echo "FAIL: $n is not built (make fuzz-build)"; exit 1; }
    [[ -d tests/fuzz/corpus/$n ]] || { echo "FAIL: $n has no seed corpus in tests/fuzz/corpus/$n"; exit 1; }
done
exec tests/fuzz/run.sh "${FUZZ_SHORT_SECONDS:-3}"
