#!/usr/bin/env bash
# make fuzz: run every fuzz target for N seconds (default 20) from its corpus
# directory under build/fuzz/corpus/. Fails when a target finds a crash.
set -u
cd "$(dirname "$0")/../.."
seconds=${1:-20}
rc=0
for f in build/fuzz/fuzz_*; do
    [[ -x $f ]] || continue
    name=$(basename "$f")
    corpus=build/fuzz/corpus/$name
    mkdir -p "$corpus"
    echo "== $name (${seconds}s)"
    if ! "$f" -max_total_time="$seconds" -rss_limit_mb=1024 -artifact_prefix=build/fuzz/ \
        "$corpus" 2>build/fuzz/$name.log; then
        echo "$name: FAILED, see build/fuzz/$name.log"; tail -n 30 build/fuzz/$name.log; rc=1
    else
        grep -E '^(#[0-9]+.*DONE|Done)' build/fuzz/$name.log | tail -n 1
    fi
done
exit $rc
