#!/usr/bin/env bash
# make fuzz (and, short, make test): run every fuzz target for N seconds
# (default 20) over its committed seed corpus (tests/fuzz/corpus/NAME, read
# only) and its working corpus (build/fuzz/corpus/NAME, where new inputs go).
# Prints one line per target: runs, executions per second, edges covered
# (libFuzzer's cov:) and corpus size. Fails when a target finds a crash, a
# leak or a timeout; the input is left in build/fuzz/ (crash-*, leak-*...).
#
#   tests/fuzz/run.sh [SECONDS] [NAME...]
set -u
cd "$(dirname "$0")/../.."
seconds=${1:-20}; shift || true
targets=("$@")
((${#targets[@]})) || targets=($(ls build/fuzz/ 2>/dev/null | grep '^fuzz_' | grep -v '\.log$'))
((${#targets[@]})) || { echo "no fuzz targets built (make fuzz-build)"; exit 1; }
rc=0
printf '%-18s %10s %9s %6s %s\n' target runs exec/s edges corpus
for name in "${targets[@]}"; do
    f=build/fuzz/$name
    [[ -x $f ]] || { echo "$name: not built"; rc=1; continue; }
    corpus=build/fuzz/corpus/$name seeds=tests/fuzz/corpus/$name
    mkdir -p "$corpus"
    [[ -d $seeds ]] || seeds=
    if ! "$f" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix=build/fuzz/ "$corpus" $seeds >build/fuzz/$name.log 2>&1; then
        echo "$name: FAILED, see build/fuzz/$name.log"; tail -n 30 build/fuzz/$name.log; rc=1
        continue
    fi
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' build/fuzz/$name.log | tail -n 1)
    runs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$done_line")
    cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | cut -d' ' -f2)
    corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$done_line" | cut -d' ' -f2)
    eps=$(grep -oE 'exec/s: [0-9]+' <<<"$done_line" | cut -d' ' -f2)
    printf '%-18s %10s %9s %6s %s\n' "$name" "${runs:-?}" "${eps:-?}" "${cov:-?}" "${corp:-?}"
done
exit $rc
