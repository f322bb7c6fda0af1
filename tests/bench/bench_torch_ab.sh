#!/usr/bin/env bash
# What the agent costs a real training job: the job's own step time
# (tests/e2e/demo_job.py: PyTorch DDP, CPU, gloo, 4 ranks, default buckets,
# no annotation, launched with torch.multiprocessing.spawn) without the agent
# (A) and with it (B: every default probe, default settings, sending to a
# collector on this machine), in interleaved pairs of short runs (A B, B A,
# A B, ...: the order alternates so a drift of the machine's load favours
# neither). Per run: the median step time over all ranks from step WARM on,
# the ranks' CPU time per step (all threads; uprobes run in the ranks) and
# the step less the main thread's wait for a core. Per pair: B - A. Prints
# one line: the median paired difference as a share of A's median with a
# bootstrap 95% interval (2,000 resamples of the pairs, fixed seed).
#
#   BENCH_PAIRS (8, at least 6)  BENCH_STEPS (80 per run)  BENCH_RUNS=FILE keeps per-run figures
# Needs root (the agent's eBPF probes), python3-torch and BTF; says why and
# exits 0 without them (make bench runs every script).
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${ARGUS_BUILD:-$PWD/build}/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the demo's collector is plaintext on loopback
pairs=${BENCH_PAIRS:-8} steps=${BENCH_STEPS:-80} warm=10
[[ $pairs =~ ^[0-9]+$ ]] && ((pairs >= 6)) || { echo "BENCH_PAIRS must be 6 or more, not '$pairs'" >&2; exit 2; }
[[ $steps =~ ^[0-9]+$ ]] && ((steps >= warm + 20)) || { echo "BENCH_STEPS must be $((warm + 20)) or more" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "skip: needs root (the agent's eBPF probes)"; exit 0; }
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "skip: /usr/bin/python3 has no torch"; exit 0; }
[[ -r /sys/kernel/btf/vmlinux ]] || { echo "skip: no kernel BTF"; exit 0; }

work=$(mktemp -d /tmp/argus-bench-ab.XXXXXX)
collector="" agent="" job=""
stop() { # PID: SIGTERM, SIGKILL after 10 s, reaped
    [[ -n $1 ]] || return 0
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
cleanup() {
    [[ -z $job ]] || kill -KILL -- "-$job" 2>/dev/null
    stop "$agent"
    stop "$collector"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cport=$(port) aport=$(port)
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$cport" --grpc.plaintext true --http.listen "" --store.dir "$work/store" \
    >"$work/collector.log" 2>&1 &
collector=$!

# run A|B INDEX: one run of the job; appends "MODE PAIR step_ms cpu_ms
# less_wait_ms seen" to runs (seen, B only: ranks and rank-steps of the run
# at the collector, e.g. 4r/320s: the agent traced the job)
run() {
    local mode=$1 i=$2 tracked=0
    if [[ $mode == B ]]; then
        rm -rf "$work/spool"
        "$BIN/argus-agent" --collector.address "127.0.0.1:$cport" --grpc.plaintext true --http.listen "127.0.0.1:$aport" \
            --spool.dir "$work/spool" --cupti.socket "$work/cupti.sock" >>"$work/agent.log" 2>&1 &
        agent=$!
        for _ in $(seq 300); do curl -sf "127.0.0.1:$aport/healthz" >/dev/null && break; sleep 0.1; done
    fi
    ARGUS_JOB=bench-ab-$i$mode STEPS=$steps WARM=$warm OMP_NUM_THREADS=1 \
        setsid /usr/bin/python3 tests/e2e/demo_job.py "$(port)" >"$work/job.out" 2>&1 &
    job=$!
    wait "$job" || { echo "bench_torch_ab: the job failed: $(tail -3 "$work/job.out")" >&2; exit 1; }
    job=""
    if [[ $mode == B ]]; then
        sleep 2 # the agent's last batch (batch.max_age 1s)
        tracked=$("$BIN/argusctl" --collector "127.0.0.1:$cport" jobs |
            awk -v j="bench-ab-$i$mode" '$1 == j {print $2 "r/" $5 "s"}')
        stop "$agent"
        agent=""
    fi
    /usr/bin/python3 - "$work/job.out" "$mode" "$i" "$warm" "${tracked:-0}" >>"$work/runs" <<'PY'
import statistics, sys
path, mode, pair, warm, tracked = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
durs, cpu, wait, n = [], 0, 0, 0
for line in open(path):
    kv = dict(x.split("=") for x in line.split()[1:])
    if line.startswith("JOBSTEP") and int(kv["step"]) >= warm:
        durs.append(int(kv["dur_ns"]))
    elif line.startswith("JOBCPU"):
        cpu += int(kv["cpu_ns"]); wait += int(kv["wait_ns"]); n += int(kv["steps"])
step = statistics.median(durs)
print(mode, pair, "%.3f %.3f %.3f" % (step / 1e6, cpu / n / 1e6, (sum(durs) - wait) / n / 1e6), tracked)
PY
}

for ((i = 0; i < pairs; i++)); do
    if ((i % 2)); then run B "$i" && run A "$i"; else run A "$i" && run B "$i"; fi
done
[[ -z ${BENCH_RUNS:-} ]] || cp "$work/runs" "$BENCH_RUNS"
/usr/bin/python3 - "$work/runs" "$steps" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import random, statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
a = {r[1]: [float(x) for x in r[2:5]] for r in runs if r[0] == "A"}
b = {r[1]: [float(x) for x in r[2:5]] for r in runs if r[0] == "B"}
tracked = [r[5] for r in runs if r[0] == "B"]
keys = sorted(a, key=int)
rng = random.Random(13)

def figure(k):
    d = [b[p][k] - a[p][k] for p in keys]
    base = statistics.median(a[p][k] for p in keys)
    boot = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(2000))
    return base, 100 * statistics.median(d) / base, 100 * boot[49] / base, 100 * boot[1949] / base

s, c, w = figure(0), figure(1), figure(2)
print("agent on a real PyTorch DDP job (4 ranks, gloo, CPU, %d pairs x %s steps, %s CPUs, load %s): "
      "step time %+.2f%% (95%% CI %+.2f..%+.2f%%) of %.1f ms; step less the wait for a core %+.2f%% "
      "(%+.2f..%+.2f%%); rank CPU per step %+.2f%% (%+.2f..%+.2f%%) of %.1f ms; B runs at the collector (ranks/rank-steps): %s"
      % (len(keys), sys.argv[2], sys.argv[3], sys.argv[4], s[1], s[2], s[3], s[0], w[1], w[2], w[3],
         c[1], c[2], c[3], c[0], ",".join(tracked)))
PY
