#!/usr/bin/env bash
# The test runner of `make test`: every unit test binary (plain and ASan+UBSan),
# then the static checks of the tree (every executable tests/lint/*.sh), then
# every integration script (tests/e2e/demo.sh is `make demo`, not a test). A
# script exits 0 (pass), 77 (skip, after printing why) or anything else
# (fail). The last line is the summary CI reads: "N passed, N failed, N
# skipped".
#
#   tests/run.sh [PATTERN]   only tests whose name contains PATTERN
set -u
cd "$(dirname "$0")/.."
pattern=${1:-}
passed=0 failed=0 skipped=0 failures=()
logdir=build/test-logs
mkdir -p "$logdir"

run_one() { # name, command...
    local name=$1; shift
    [[ -n $pattern && $name != *"$pattern"* ]] && return
    local log="$logdir/${name//\//_}.log" start=$SECONDS rc
    "$@" >"$log" 2>&1
    rc=$?
    local took=$((SECONDS - start))
    if [[ $rc == 0 ]]; then
        passed=$((passed + 1)); printf 'PASS  %-50s %3ss\n' "$name" "$took"
    elif [[ $rc == 77 ]]; then
        skipped=$((skipped + 1))
        printf 'SKIP  %-50s %s\n' "$name" "$(grep -m1 -i 'skip' "$log" || tail -n1 "$log")"
    else
        failed=$((failed + 1)); failures+=("$name")
        printf 'FAIL  %-50s %3ss (exit %s)\n' "$name" "$took" "$rc"
        tail -n 40 "$log" | sed 's/^/      | /'
    fi
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ARGUS_BUILD=${ARGUS_BUILD:-$PWD/build}

for t in build/tests/unit/test_*; do
    [[ -x $t ]] && run_one "unit/$(basename "$t")" "$t"
done
for t in build/asan/tests/unit/test_*; do
    [[ -x $t ]] && run_one "asan/$(basename "$t")" "$t"
done
for t in tests/lint/*.sh tests/integration/*.sh; do
    [[ -x $t ]] && run_one "${t#tests/}" "$t"
done

if ((failed)); then
    echo "failed: ${failures[*]} (logs in $logdir/)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
