#!/usr/bin/env bash
# make bench: every benchmark binary (build/bench/bench_*) and script
# (tests/bench/bench_*.sh), one after the other so they do not disturb each
# other. Figures go to stdout and to build/bench/results.txt.
set -u
cd "$(dirname "$0")/../.."
out=build/bench/results.txt
mkdir -p build/bench
: >"$out"
for b in build/bench/bench_* tests/bench/bench_*.sh; do
    [[ -x $b ]] || continue
    echo "== $(basename "$b")" | tee -a "$out"
    "$b" 2>&1 | tee -a "$out"
done
echo "results in $out"
