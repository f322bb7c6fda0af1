#!/usr/bin/env bash
# Cost of the eBPF host probes: each probe's workload timed without and with
# the probe (side by side, best of 3 each), the cost per event, ring-buffer
# events/s; then the whole host channel (all probes) on 8 training-like
# ranks: the extra thread CPU per step on a rank and the step time, over
# interleaved pairs of runs without/with, and the probe drivers' own CPU.
#
#   BENCH_PAIRS=12 BENCH_TRAIN_STEPS=60   pairs of runs, steps per run
#   BENCH_CHANNEL="sched stacks"          only these probes in the channel part
#   BENCH_CHANNEL_ONLY=1                  skip the per-probe rows
#   BENCH_ROWS_ONLY=1                     only the per-probe rows
#   BENCH_RUNS=FILE                       keep the raw per-run figures
set -u
cd "$(dirname "$0")/../.."
. tests/bpf/lib.sh
bpf_require_root
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT # ranks still waiting for the go
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

if [[ -z ${BENCH_CHANNEL_ONLY:-} ]]; then
    printf "%-12s %-34s %10s %10s %13s %9s %12s\n" probe "workload (per op)" "ns/op off" "ns/op on" \
        "cost/op" events "events/s"
    row collectives "ncclAllReduce call (uprobe+ret)" 100000 bench 100000
    row sync "cudaMalloc(16)+free (uprobe+ret)" 100000 benchsync 100000
    row marker "argus_step call (uprobe)" 100000 benchmarker 100000
    row sched "pipe round trip (2 wakeups+switches)" 50000 pingpong 50000
    EXTRA="--freq 99" row stacks "2 s compute at 99 Hz (per ms)" 2000 spin 2000
    row proc "fork+exec /bin/true (2 events)" 500 forkexec 500
fi
[[ -z ${BENCH_ROWS_ONLY:-} ]] || exit 0

# The whole host channel on 8 training-like ranks: runs of the job without
# and with all 8 probe drivers, in interleaved pairs (ABBA...: a drift of
# the machine hits both sides alike). Each rank reports, per step, its wall
# time and its thread CPU time; the uprobes, the tracepoints and the samples
# run on the probed (or the interrupted) thread and are charged to it, so
# the extra CPU per step is what the probes cost the ranks, whatever else
# the machine does. The 8 ranks share 2 cores here, where on a GPU node each
# has its own: they are pinned round-robin to the CPUs, started
# FAKE_SYNC_US/ranks apart so that the ranks of a core compute in turn, and
# run SCHED_FIFO so that two which drift into each other queue once rather
# than time-share and lock into step (under SCHED_OTHER that made the step
# time swing by +-10% from run to run). Each rank also reports its wait for
# a core, shown apart. The drivers are not pinned; they run when the ranks
# do not (on a GPU node, on other cores), and their CPU is shown apart.
ranks=8 steps=${BENCH_TRAIN_STEPS:-60} pairs=${BENCH_PAIRS:-12}
channel=${BENCH_CHANNEL:-sched stacks collectives sync marker proc net io}
ncpu=$(nproc)
rank_sched="chrt -f 1"
chrt -f 1 true 2>/dev/null || {
    rank_sched=
    echo "note: cannot run the ranks SCHED_FIFO; they time-share, and the wall-clock figures swing with it"
}
export FAKE_SYNC_US=30000
"$BPF_WORKLOAD" train 0 >"$out/calibrate" 2>&1
export TRAIN_COMPUTE_ITERS=$(field "$out/calibrate" compute_iters)
[[ -n $TRAIN_COMPUTE_ITERS ]] || { cat "$out/calibrate"; echo "calibration failed"; exit 1; }

exec_ns() { # CPU ns each given process has used (/proc/PID/schedstat), one line
    local p v
    for p in "$@"; do
        read -r v _ <"/proc/$p/schedstat" 2>/dev/null || v=0
        echo -n "$v "
    done
    echo
}

# Machine counters, in clock ticks: idle+iowait (measured, not sampled),
# steal (other VMs), and the CPU of this script's waited-for children.
machine_ticks() {
    awk '/^cpu / { printf "%d %d ", $5 + $6, $9 }' /proc/stat
    awk '{ print $16 + $17 }' "/proc/$$/stat"
}

wait_line() { # file, pattern (grep -E): up to 10 s
    for _ in $(seq 200); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    cat "$1"; echo "timed out waiting for '$2' in $1"; exit 1
}

start_drivers() { # pids of the ranks: starts the drivers, leaves their pids in drv
    local p args=()
    for p in "$@"; do args+=(--pid "$p"); done
    drv=()
    for p in $channel; do
        "$BPF_DRIVER" "$p" --quiet "${args[@]}" >"$out/drv.$p" 2>&1 &
        drv+=($!)
    done
    for p in $channel; do
        wait_line "$out/drv.$p" '^(started|skip|FAIL)'
        grep -q '^skip' "$out/drv.$p" && { cat "$out/drv.$p"; exit 77; }
        grep -q '^started' "$out/drv.$p" || { cat "$out/drv.$p"; exit 1; }
    done
}

# run_ranks 0|1 (probes): appends to $out/runs one line: probes, the means
# over the ranks of step_ns step_median_ns step_p10_ns cpu_ns compute_cpu_ns
# calls_cpu_ns run_delay_ns, then drivers_cpu_ns job_ns events, then the
# shares of the machine's CPUs (%) that other processes used and that the
# host stole; and with probes, to $out/drivers each driver's CPU (% of one
# core).
run_ranks() {
    rm -f "$out/go" "$out"/rank.* "$out"/drv.*
    local pids=() drv=() r d0= d1= r0 t0 t1 m0 m1
    for r in $(seq 0 $((ranks - 1))); do
        ARGUS_GO=$out/go TRAIN_START_DELAY_US=$((r * FAKE_SYNC_US / ranks)) \
            $rank_sched taskset -c $((r % ncpu)) "$BPF_WORKLOAD" train "$steps" >"$out/rank.$r" 2>&1 &
        pids+=($!)
    done
    [[ $1 == 1 ]] && start_drivers "${pids[@]}"
    for r in $(seq 0 $((ranks - 1))); do wait_line "$out/rank.$r" ready; done
    r0=$(exec_ns "${pids[@]}"); d0=$(exec_ns "${drv[@]}"); m0=$(machine_ticks); t0=$(date +%s%N)
    touch "$out/go"; wait "${pids[@]}"
    t1=$(date +%s%N); d1=$(exec_ns "${drv[@]}"); m1=$(machine_ticks)
    [[ $1 == 1 ]] && wait "${drv[@]}"
    cat "$out"/rank.* | awk -v p="$1" '/^did train/ { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] += a[2] } n++ }
        END { printf "%d %.1f %.1f %.1f %.1f %.1f %.1f %.1f ", p, v["step_ns"] / n, v["step_median_ns"] / n,
              v["step_p10_ns"] / n, v["cpu_ns"] / n, v["compute_cpu_ns"] / n, v["calls_cpu_ns"] / n,
              v["run_delay_ns"] / n }' >>"$out/runs"
    cat "$out"/drv.* 2>/dev/null | awk -v t=$((t1 - t0)) -v d0="$d0" -v d1="$d1" -v r0="$r0" -v m0="$m0" -v m1="$m1" \
        -v names="$channel" -v hz="$(getconf CLK_TCK)" -v ncpu="$ncpu" -v drivers="$out/drivers" '
        /^RUSAGE/ { for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == "events") e += a[2] } }
        END { n = split(d0, a, " "); split(d1, b, " "); split(names, nm, " "); d = 0
              for (i = 1; i <= n; i++) { d += b[i] - a[i]; printf "%s %.3f\n", nm[i], 100 * (b[i] - a[i]) / t >>drivers }
              n = split(r0, a, " "); before = 0; for (i = 1; i <= n; i++) before += a[i]
              split(m0, a, " "); split(m1, b, " "); cap = t / 1e9 * hz * ncpu; st = b[2] - a[2]
              busy = cap - (b[1] - a[1]) - st; ours = b[3] - a[3] + (d - before) / 1e9 * hz
              printf "%.0f %.0f %d %.1f %.1f\n", d, t, e, 100 * (busy - ours) / cap, 100 * st / cap }' >>"$out/runs"
}

run_ranks 1; : >"$out/runs"; : >"$out/drivers" # a warm-up run, not counted
for i in $(seq "$pairs"); do
    if ((i % 2)); then run_ranks 0; run_ranks 1; else run_ranks 1; run_ranks 0; fi
done

# What the per-call costs above predict per step: 6 collectives, a
# cudaStreamSynchronize with its nested cuStreamSynchronize (2 probed calls,
# costed like one sync call each), one argus_step (hot loops: a lower bound).
pred=0
[[ -r $out/cost.collectives ]] &&
    pred=$((6 * $(cat "$out/cost.collectives") + 2 * $(cat "$out/cost.sync") + $(cat "$out/cost.marker")))

# Pair k: the k-th run without and the k-th run with (adjacent in time).
# Each figure: the median over the pairs of the with-without difference,
# [its interquartile range] and (a bootstrap 95% interval of that median:
# 2,000 resamples, fixed seed). The step time holds each rank's wait for a
# core (another rank's compute, the kernel, other processes), which a rank
# with a core of its own does not see; the step time less that wait
# (run-queue delay, /proc/thread-self/schedstat) is the rank's own. The
# target is met when the CPU-time method's interval lies below 0.5% and
# the interval of the step time less the wait does not lie above it.
[[ -n ${BENCH_RUNS:-} ]] && cp "$out/runs" "$BENCH_RUNS"
per_driver=$(awk -v names="$channel" '{ v[$1] = v[$1] " " $2 } END { m = split(names, nm, " ")
    for (k = 1; k <= m; k++) { p = nm[k]; n = split(v[p], x, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
        printf "%s %.2f, ", p, n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 } }' "$out/drivers")
awk -v r=$ranks -v s=$steps -v pred="$pred" -v chan="$channel" -v ncpu="$ncpu" -v ndrv="$(wc -w <<<"$channel")" \
    -v per_driver="${per_driver%, }" '
function sort(x, n,   i, j, v) { for (i = 2; i <= n; i++) { v = x[i]; for (j = i - 1; j >= 1 && x[j] > v; j--) x[j + 1] = x[j]; x[j + 1] = v } }
function quantile(x, n, q,   p, i) { p = 1 + (n - 1) * q; i = int(p); return i >= n ? x[n] : x[i] + (p - i) * (x[i + 1] - x[i]) }
function stats(d, n, st,   x, m, i, b) { # median, q1, q3, lo, hi, max of d[1..n] into st
    for (i = 1; i <= n; i++) x[i] = d[i]
    sort(x, n); st["med"] = quantile(x, n, 0.5); st["q1"] = quantile(x, n, 0.25); st["q3"] = quantile(x, n, 0.75)
    st["max"] = x[n]
    srand(1)
    for (b = 1; b <= 2000; b++) {
        for (i = 1; i <= n; i++) x[i] = d[1 + int(rand() * n)]
        sort(x, n); m[b] = quantile(x, n, 0.5)
    }
    sort(m, 2000); st["lo"] = m[50]; st["hi"] = m[1951]
}
function fig(st, f) { return sprintf(f " [" f ", " f "] (" f ", " f ")", st["med"], st["q1"], st["q3"], st["lo"], st["hi"]) }
function span(st) { return sprintf("IQR %+.2f..%+.2f%%, 95%% CI %+.2f..%+.2f%%", st["q1"], st["q3"], st["lo"], st["hi"]) }
{ if ($1 == 0) { na++; for (i = 2; i <= NF; i++) A[na, i] = $i } else { nb++; for (i = 2; i <= NF; i++) B[nb, i] = $i } }
END {
    n = na < nb ? na : nb
    for (k = 1; k <= n; k++) {
        base[k] = A[k, 2]; cpu0[k] = A[k, 5] / 1000; wait0[k] = A[k, 8] / 1e6
        cpu_us[k] = (B[k, 5] - A[k, 5]) / 1000; cpu[k] = 100 * (B[k, 5] - A[k, 5]) / A[k, 2]
        comp[k] = (B[k, 6] - A[k, 6]) / 1000; calls[k] = (B[k, 7] - A[k, 7]) / 1000
        wall[k] = 100 * (B[k, 2] - A[k, 2]) / A[k, 2]; wmed[k] = 100 * (B[k, 3] - A[k, 3]) / A[k, 3]
        wp10[k] = 100 * (B[k, 4] - A[k, 4]) / A[k, 4]; wait[k] = (B[k, 8] - A[k, 8]) / 1e6
        own[k] = 100 * ((B[k, 2] - B[k, 8]) - (A[k, 2] - A[k, 8])) / A[k, 2]
        drv[k] = 100 * B[k, 9] / B[k, 10]; evs[k] = B[k, 11] / (B[k, 10] / 1e9); evstep[k] = B[k, 11] / (r * s)
        other[2 * k - 1] = A[k, 12]; other[2 * k] = B[k, 12]; steal[2 * k - 1] = A[k, 13]; steal[2 * k] = B[k, 13]
    }
    stats(base, n, S); stats(cpu0, n, Q); stats(wait0, n, Y0); stats(cpu_us, n, U); stats(cpu, n, C)
    stats(comp, n, P); stats(calls, n, L); stats(wall, n, W); stats(wmed, n, M); stats(wp10, n, X)
    stats(wait, n, Y); stats(own, n, Z); stats(drv, n, D); stats(evs, n, E); stats(evstep, n, V)
    stats(other, 2 * n, O); stats(steal, 2 * n, T)
    printf "\nprobes %s on %d ranks x %d steps (argus_step, 2 ms compute, 6 ncclAllReduce, 30 ms sync),\n", chan, r, s
    printf "%d pairs of runs without/with, interleaved; each figure: median of the %d paired differences [IQR] (bootstrap 95%% CI of the median)\n", n, n
    printf "  without probes: step %.3f ms, thread CPU %.1f us per step on a rank, of which waiting for a core %.2f ms (medians of the runs)\n",
        S["med"] / 1e6, Q["med"], Y0["med"]
    printf "  CPU-time method, extra thread CPU per step on a rank: %s us = %s%% of step time\n", fig(U, "%+.1f"), fig(C, "%+.3f")
    printf "    in the 2 ms compute %s us, in the rest (argus_step, 6 ncclAllReduce, sync) %s us\n", fig(P, "%+.1f"), fig(L, "%+.1f")
    if (pred > 0) printf "    the per-call costs above (hot loops) predict %+.1f us = %+.3f%%\n", pred / 1000, 100 * pred / S["med"]
    printf "  wall-clock method, step time: mean %s%%, median %s%%, 10th percentile %s%%\n", fig(W, "%+.2f"), fig(M, "%+.2f"), fig(X, "%+.2f")
    printf "    the wait for a core (%d ranks share %d cores): %s ms; the step less that wait: %s%%\n", r, ncpu, fig(Y, "%+.2f"), fig(Z, "%+.2f")
    printf "  probe drivers (%d processes) while the job ran: %.2f%% of one core [%.2f, %.2f] (%s); ring buffers %.0f events/s [%.0f, %.0f], %.1f per rank-step\n",
        ndrv, D["med"], D["q1"], D["q3"], per_driver, E["med"], E["q1"], E["q3"], V["med"]
    printf "  meanwhile other processes used %.0f%% of the %d CPUs (median of the runs, max %.0f%%), the host stole %.1f%% (max %.1f%%)\n",
        (O["med"] > 0 ? O["med"] : 0), ncpu, (O["max"] > 0 ? O["max"] : 0), T["med"], T["max"]
    met = C["hi"] < 0.5 && Z["lo"] < 0.5
    printf "host channel: %+.2f%% of step time (CPU-time method, median of %d pairs, %s), wall-clock method: %+.2f%% (%s; less the wait for a shared core %+.2f%%, %s); target < 0.5%%: %s\n",
        C["med"], n, span(C), W["med"], span(W), Z["med"], span(Z), met ? "met" : "not met"
}' "$out/runs"
