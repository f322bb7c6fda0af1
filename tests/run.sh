#!/usr/bin/env bash
# The test runner of `make test`: every unit test binary (plain and ASan+UBSan),
# the static checks of the tree (every executable tests/lint/*.sh) and every
# integration script (tests/e2e/demo.sh is `make demo`, not a test). A script
# exits 0 (pass), 77 (skip, after printing why) or anything else (fail).
#
# Tests run side by side, ARGUS_TEST_JOBS at a time (default: the number of
# CPUs, at most 4; 1 runs them one after another). Integration scripts take
# free ports and a private temporary directory (tests/integration/lib.sh), so
# any two can share the machine; what they may not share is CPU, and a script
# says how much it takes with a line in its header comment:
#   # test-cpu: all: WHY     every core (a real PyTorch job, a timing check,
#                            a view of every process): runs beside "idle"
#                            scripts only
#   # test-cpu: idle: WHY    mostly waits (fixed-rate replays, fixed sleeps):
#                            may run beside an "all" one
#   # test-cpu: alone: WHY   measures the machine's steadiness itself (a
#                            healthy real job must show no finding: a
#                            neighbour starting makes the whole job slower,
#                            which is a true finding): nothing beside it
# and the others take one core. A unit test binary says it the same way in
# its source's header comment (" * test-cpu: all: WHY" in tests/unit/NAME.c).
# The "all" scripts start first, then the other integration scripts, then the
# unit tests and lints.
#
# One line per test as it ends (PASS/FAIL/SKIP, its seconds; a failure's log
# tail under it); the last line is the summary CI reads: "N passed, N failed,
# N skipped".
#
#   tests/run.sh [PATTERN]   only tests whose name contains PATTERN
set -u
cd "$(dirname "$0")/.."
pattern=${1:-}
passed=0 failed=0 skipped=0 failures=()
logdir=build/test-logs
mkdir -p "$logdir"
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
    echo "tests/run.sh needs bash 5.1 or later (wait -n -p), this is $BASH_VERSION"
    exit 1
fi
max_jobs=$(nproc 2>/dev/null || echo 2)
((max_jobs <= 4)) || max_jobs=4
max_jobs=${ARGUS_TEST_JOBS:-$max_jobs}
((max_jobs >= 1)) || max_jobs=1

# report NAME RC SECONDS: the test's line, and a failure's log tail.
report() {
    local name=$1 rc=$2 took=$3 log="$logdir/${1//\//_}.log"
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

# The queue (name, path and CPU weight of each test not started yet) and the
# running tests by pid; used is the weight of the running ones.
q_name=() q_path=() q_weight=()
declare -A run_name=() run_start=() run_weight=()
used=0

# weight_of PATH: prints the test's CPU weight from its test-cpu tag (a
# unit binary's in its source, tests/unit/NAME.c): max_jobs for "all", 0 for
# "idle", "alone" for "alone" (max_jobs, and nothing beside), else 1.
weight_of() {
    local src=$1 cpu
    [[ $1 == */tests/unit/test_* ]] && src=tests/unit/$(basename "$1").c
    [[ -f $src && ($src == *.sh || $src == *.c) ]] &&
        cpu=$(sed -n 's/^\(#\| \*\|\/\*\) test-cpu: \([a-z]*\).*/\2/p' "$src" | head -n1)
    case ${cpu:-} in
    all) echo "$max_jobs" ;;
    alone) echo alone ;;
    idle) echo 0 ;;
    *) echo 1 ;;
    esac
}

# queue NAME PATH [WEIGHT]: adds a test (WEIGHT: weight_of PATH when not given).
queue() {
    [[ -n $pattern && $1 != *"$pattern"* ]] && return
    q_name+=("$1") q_path+=("$2") q_weight+=("${3:-$(weight_of "$2")}")
}

# start_fitting: starts the first queued test that fits beside the running
# ones (their weights within max_jobs, at most max_jobs tests; an "alone"
# test when none runs, and none beside it); returns 1 when none does.
alone_pid=
start_fitting() {
    local i w
    ((${#run_name[@]} < max_jobs)) && [[ -z $alone_pid ]] || return 1
    for i in "${!q_name[@]}"; do
        w=${q_weight[i]}
        if [[ $w == alone ]]; then
            ((${#run_name[@]} == 0)) || continue
            w=$max_jobs
        fi
        ((used + w <= max_jobs)) || continue
        "${q_path[i]}" >"$logdir/${q_name[i]//\//_}.log" 2>&1 &
        run_name[$!]=${q_name[i]} run_start[$!]=$SECONDS run_weight[$!]=$w
        [[ ${q_weight[i]} == alone ]] && alone_pid=$!
        used=$((used + w))
        unset "q_name[i]" "q_path[i]" "q_weight[i]"
        return 0
    done
    return 1
}

# reap: waits for any running test to end and reports it.
reap() {
    local pid rc
    wait -n -p pid
    rc=$?
    if [[ -z ${pid-} || -z ${run_name[$pid]+x} ]]; then # no job was left: never expected
        echo "tests/run.sh: lost track of ${#run_name[@]} running tests (wait -n: $rc)"
        exit 1
    fi
    report "${run_name[$pid]}" "$rc" $((SECONDS - run_start[$pid]))
    used=$((used - run_weight[$pid]))
    [[ $pid == "$alone_pid" ]] && alone_pid=
    unset "run_name[$pid]" "run_start[$pid]" "run_weight[$pid]"
}

# An interrupted run stops the tests it runs (without job control they
# ignore SIGINT); each script's EXIT trap removes what it started.
stop_running() {
    local p
    for p in "${!run_name[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait
    echo "interrupted: $passed passed, $failed failed, $skipped skipped so far"
    exit 130
}
trap stop_running INT TERM

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ARGUS_BUILD=${ARGUS_BUILD:-$PWD/build}

# the integration scripts that take every core first, then the others
heavy=() rest=()
for t in tests/integration/*.sh; do
    [[ -x $t ]] || continue
    w=$(weight_of "$t")
    if [[ $w == alone || $w == "$max_jobs" ]]; then heavy+=("$t $w"); else rest+=("$t $w"); fi
done
for tw in "${heavy[@]}" "${rest[@]}"; do
    queue "integration/$(basename "${tw% *}")" "${tw% *}" "${tw##* }"
done
for t in build/tests/unit/test_*; do
    [[ -x $t ]] && queue "unit/$(basename "$t")" "$t"
done
for t in build/asan/tests/unit/test_*; do
    [[ -x $t ]] && queue "asan/$(basename "$t")" "$t"
done
for t in tests/lint/*.sh; do
    [[ -x $t ]] && queue "${t#tests/}" "$t"
done

while ((${#q_name[@]})); do
    start_fitting || reap
done
while ((${#run_name[@]})); do reap; done

if ((failed)); then
    echo "failed: ${failures[*]} (logs in $logdir/)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
