#!/usr/bin/env bash
# The kernel compression bounds stay met (issue 30; docs/benchmarks.md, kernel
# compression): build/bench/bench_compression --check fails when an
# ARGUS-scale synthetic step alone ships under 5,000x its raw CUPTI records,
# a step in a batch of 8 under 3,700x, or (the real Kineto traces of
# ../shared/data/kineto present) a lone steady step of a dense real line
# under 2,000x. The bench is deterministic: a drop is a change, not noise.
# test-cpu: one: a second of summarizing and coding
source "$(dirname "$0")/lib.sh"

bench=${ARGUS_BUILD:-$REPO/build}/bench/bench_compression
[[ -x $bench ]] || fail "$bench is not built (make test builds it)"
"$bench" --check >"$T/out.txt" 2>&1 || { grep -E "target|NOT" "$T/out.txt"; fail "a compression bound is not met"; }
grep -E "^target" "$T/out.txt"
echo "PASS: compression bounds met"
