#!/usr/bin/env bash
# Cost of the eBPF host probes: each probe's workload timed without and with
# the probe (side by side, best of 3 each), the cost per event, ring-buffer
# events/s, and the whole host channel (all probes) on 8 training-like ranks:
# step-time overhead and the probes' own CPU.
set -u
cd "$(dirname "$0")/../.."
. tests/bpf/lib.sh
bpf_require_root
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
export ARGUS_MARKER_LIB=$BPF_BUILD/lib/libargus-marker.so

field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | head -1; }

# best_ns PROBE|- MODE ARG: best total_ns of 3 runs; with a probe, also
# leaves the events count of the best run in $out/events.
best_ns() {
    local probe=$1 best= ev=0 t; shift
    for _ in 1 2 3; do
        if [[ $probe == - ]]; then
            "$BPF_WORKLOAD" "$@" >"$out/wl.out" 2>&1
        else
            BPF_DRIVER_ARGS="--quiet ${EXTRA:-}" bpf_run "$probe" "$out" "$@"
        fi
        t=$(field "$out/wl.out" total_ns)
        if [[ -z $best ]] || ((t < best)); then
            best=$t
            [[ $probe == - ]] || ev=$(field "$out/drv.out" events)
        fi
    done
    echo "$ev" >"$out/events"
    echo "$best"
}

row() { # probe, what, n ops, events per op (for the cost when the probe sends none)
    local probe=$1 what=$2 n=$3; shift 3
    local base with
    base=$(best_ns - "$@"); with=$(best_ns "$probe" "$@"); events=$(cat "$out/events")
    awk -v n="$n" -v b="$base" -v t="$with" 'BEGIN { printf "%.0f\n", (t - b) / n }' >"$out/cost.$probe"
    awk -v p="$probe" -v w="$what" -v n="$n" -v b="$base" -v t="$with" -v e="$events" 'BEGIN {
        printf "%-12s %-34s %10.1f %10.1f %10.2f us %9d %12.0f\n", p, w, b / n, t / n,
               (t - b) / n / 1000, e, (e > 0 ? e / (t / 1e9) : 0) }'
}

printf "%-12s %-34s %10s %10s %13s %9s %12s\n" probe "workload (per op)" "ns/op off" "ns/op on" \
    "cost/op" events "events/s"
row collectives "ncclAllReduce call (uprobe+ret)" 100000 bench 100000
row sync "cudaMalloc(16)+free (uprobe+ret)" 100000 benchsync 100000
row marker "argus_step call (uprobe)" 100000 benchmarker 100000
row sched "pipe round trip (2 wakeups+switches)" 50000 pingpong 50000
EXTRA="--freq 99" row stacks "2 s compute at 99 Hz (per ms)" 2000 spin 2000
row proc "fork+exec /bin/true (2 events)" 500 forkexec 500

# The whole host channel on 8 training-like ranks.
ranks=8 steps=150
export FAKE_SYNC_US=30000
# CPU (us) used so far by the given processes, from /proc/PID/stat.
drivers_cpu() {
    local tck=$(getconf CLK_TCK) p s=0
    for p in "$@"; do
        s=$((s + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo $((s * 1000000 / tck))
}
run_ranks() { # with_probes(0|1): prints the mean step ns, the probes' CPU us
    rm -f "$out/go" "$out"/rank.* "$out"/drv.*
    local pids=() drv=() args=()
    for r in $(seq $ranks); do
        ARGUS_GO=$out/go "$BPF_WORKLOAD" train $steps >"$out/rank.$r" 2>&1 &
        pids+=($!); args+=(--pid $!)
    done
    if [[ $1 == 1 ]]; then
        for p in sched stacks collectives sync marker proc net io; do
            "$BPF_DRIVER" $p --quiet "${args[@]}" >"$out/drv.$p" 2>&1 &
            drv+=($!)
        done
        for p in sched stacks collectives sync marker proc net io; do
            for _ in $(seq 100); do grep -q started "$out/drv.$p" 2>/dev/null && break; sleep 0.05; done
        done
    fi
    local c0=0 c1=0
    [[ $1 == 1 ]] && c0=$(drivers_cpu "${drv[@]}")
    local t0=$(date +%s%N); touch "$out/go"; wait "${pids[@]}"; local t1=$(date +%s%N)
    [[ $1 == 1 ]] && c1=$(drivers_cpu "${drv[@]}") && wait "${drv[@]}"
    cat "$out"/rank.* | awk '/did train/ { for (i=1;i<=NF;i++) if ($i ~ /^ns_per_op=/) { split($i,a,"="); s+=a[2]; n++ } }
        END { printf "%.0f ", s / n }'
    if [[ $1 == 1 ]]; then
        cat "$out"/drv.* | awk -v wall=$((t1 - t0)) -v cpu=$((c1 - c0)) '/^RUSAGE/ { for (i=2;i<=NF;i++) { split($i,a,"="); if (a[1] == "events") e+=a[2] } }
            END { printf "%.0f %.0f %d\n", cpu, wall / 1000, e }'
    else
        echo
    fi
}
b1=$(run_ranks 0); w1=($(run_ranks 1)); b2=$(run_ranks 0); w2=($(run_ranks 1))
b3=$(run_ranks 0); w3=($(run_ranks 1))
# What the per-event costs above predict per step: 6 collectives, a
# cudaStreamSynchronize with its nested cuStreamSynchronize (2 probed calls,
# costed like one sync call each), one argus_step.
coll=$(cat "$out/cost.collectives"); sync=$(cat "$out/cost.sync"); mark=$(cat "$out/cost.marker")
awk -v b1="$b1" -v b2="$b2" -v b3="$b3" -v w1="${w1[0]}" -v w2="${w2[0]}" -v w3="${w3[0]}" \
    -v cpu="${w3[1]}" -v wall="${w3[2]}" -v ev="${w3[3]}" -v r=$ranks -v s=$steps \
    -v coll="$coll" -v sync="$sync" -v mark="$mark" 'BEGIN {
    b = b1 < b2 ? b1 : b2; b = b < b3 ? b : b3; w = w1 < w2 ? w1 : w2; w = w < w3 ? w : w3
    pred = 6 * coll + 2 * sync + mark
    printf "\nall probes, %d ranks x %d steps (2 ms compute, 6 ncclAllReduce, 30 ms sync, argus_step):\n", r, s
    printf "  step time without %.3f ms, with %.3f ms: overhead %.2f%% (best of 3 each; the noise of this shared 2-core machine is of the same order)\n", b / 1e6, w / 1e6, 100 * (w - b) / b
    printf "  predicted from the per-call costs above: %.1f us of uprobes per step = %.3f%% (sched, stacks, proc, net, io add no per-step calls)\n", pred / 1000, 100 * pred / b
    printf "  probes CPU while the job ran (8 probe drivers, startup excluded): %.1f ms over %.2f s = %.2f%% of one core, %d events\n", cpu / 1000, wall / 1e6, 100 * cpu / wall, ev }'
