#!/usr/bin/env bash
# What the agent costs a real training job: the job's own step time
# (tests/e2e/demo_job.py: PyTorch DDP, CPU, gloo, 4 ranks, default buckets,
# no annotation, one process per rank with RANK at exec) without the agent
# (A) and with it (B: every default probe, default settings, sending to a
# collector on this machine). One long run of the job, and the agent started
# and stopped under it in blocks of BENCH_BLOCK_S seconds, in pairs (A B,
# B A, A B, ...: the order alternates so a drift of the machine's load
# favours neither). Separate short runs of the job vary far more from run to
# run (70-96 ms steps on a quiet 2-core machine) than the 0.5% to be shown;
# blocks of one run do not carry that. A B block starts once the agent
# tracks every rank and its uprobes are attached, plus a second; an A block
# a second after the agent exited (its probes detached). Per block: the
# median step time over all ranks of the steps that start in it, and the
# ranks' CPU time per step (all threads; uprobes run in the ranks). Per
# pair: B - A. Prints one line: the median paired difference as a share of
# A's median with a bootstrap 95% interval (2,000 resamples of the pairs,
# fixed seed).
#
#   BENCH_PAIRS (8, at least 6)  BENCH_BLOCK_S (15 s)  BENCH_RUNS=FILE keeps per-block figures
#   BENCH_PROBES=LIST: the agent's probes.enable (default: its default list)
#   BENCH_BURN_MS=N: a control, no agent: the B blocks run a process on the
#   agent's CPUs that spins N ms every 100 ms (an agent's own CPU, without
#   anything in the ranks), to tell the host's cost of a busy neighbour CPU
#   from the agent's
#   BENCH_JOB_CPUS=LIST, BENCH_AGENT_CPUS=LIST: taskset CPU lists for the ranks
#   and for the agent and collector (default: all CPUs for each). On a GPU node
#   the ranks leave cores idle; on a 2-core machine the 4 ranks take both, so
#   any CPU the agent uses is taken from them. "0" and "1" here split the two:
#   what is then left is the agent's cost inside the ranks (BPF, uprobes).
# Needs root (the agent's eBPF probes), python3-torch and BTF; says why and
# exits 0 without them (make bench runs every script).
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${ARGUS_BUILD:-$PWD/build}/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the bench's collector is plaintext on loopback
pairs=${BENCH_PAIRS:-8} block=${BENCH_BLOCK_S:-15} world=4
[[ $pairs =~ ^[0-9]+$ ]] && ((pairs >= 6)) || { echo "BENCH_PAIRS must be 6 or more, not '$pairs'" >&2; exit 2; }
[[ $block =~ ^[0-9]+$ ]] && ((block >= 5)) || { echo "BENCH_BLOCK_S must be 5 (seconds) or more, not '$block'" >&2; exit 2; }
# "taskset -c LIST" or nothing, used unquoted (words)
pin_job=${BENCH_JOB_CPUS:+taskset -c $BENCH_JOB_CPUS} pin_agent=${BENCH_AGENT_CPUS:+taskset -c $BENCH_AGENT_CPUS}
pin_desc=""
[[ -z ${BENCH_JOB_CPUS:-} ]] || pin_desc+="; ranks on CPUs $BENCH_JOB_CPUS"
[[ -z ${BENCH_AGENT_CPUS:-} ]] || pin_desc+="; agent and collector on CPUs $BENCH_AGENT_CPUS"
[[ -z ${BENCH_BURN_MS:-} ]] || pin_desc+="; CONTROL: no agent, the B blocks spin $BENCH_BURN_MS ms every 100 ms on the agent's CPUs"
for p in "${BENCH_JOB_CPUS:-}" "${BENCH_AGENT_CPUS:-}"; do
    [[ -z $p ]] || taskset -c "$p" true 2>/dev/null || { echo "not a CPU list this machine has: '$p'" >&2; exit 2; }
done
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
$pin_agent "$BIN/argus-collector" --grpc.listen "127.0.0.1:$cport" --grpc.plaintext true --http.listen "" --store.dir "$work/store" \
    >"$work/collector.log" 2>&1 &
collector=$!

mono() { /usr/bin/python3 -c 'import time; print(time.monotonic_ns())'; }
metric() { curl -s "127.0.0.1:$aport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
job_steps() { local n; n=$(grep -c '^JOBSTEP rank=0 ' "$work/job.out" 2>/dev/null); echo "${n:-0}"; }

# one process per rank with its rank at exec (as torchrun starts them): the
# agent, started under a running job, finds them from their environment
PIN=$pin_job ARGUS_JOB=bench-ab STEPS=1000000 WARM=10 OMP_NUM_THREADS=1 WORLD=$world MASTER_PORT=$(port) \
    setsid bash -c 'for ((r = 0; r < WORLD; r++)); do
        RANK=$r WORLD_SIZE=$WORLD $PIN /usr/bin/python3 tests/e2e/demo_job.py "$MASTER_PORT" &
    done; wait' >"$work/job.out" 2>&1 &
job=$!
for _ in $(seq 600); do (($(job_steps) >= 20)) && break; kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
(($(job_steps) >= 20)) || { echo "bench_torch_ab: the job did not start: $(tail -3 "$work/job.out")" >&2; exit 1; }

# agent_on: start the agent and wait until it tracks every rank with its
# collectives uprobes attached (when that probe runs); agent_off: SIGTERM,
# wait for the exit.
agent_on() {
    if [[ -n ${BENCH_BURN_MS:-} ]]; then
        $pin_agent /usr/bin/python3 -c 'import sys, time
ms = float(sys.argv[1]) / 1e3
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < ms:
        pass
    time.sleep(0.1 - ms)' "$BENCH_BURN_MS" &
        agent=$!
        return 0
    fi
    $pin_agent "$BIN/argus-agent" --collector.address "127.0.0.1:$cport" --grpc.plaintext true --http.listen "127.0.0.1:$aport" \
        --spool.dir "$work/spool" --cupti.socket "$work/cupti.sock" \
        ${BENCH_PROBES+--probes.enable "$BENCH_PROBES"} >>"$work/agent.log" 2>&1 &
    agent=$!
    for _ in $(seq 300); do
        [[ $(metric argus_agent_ranks) == "$world" ]] && { [[ ,${BENCH_PROBES-collectives}, != *,collectives,* ]] ||
            curl -s "127.0.0.1:$aport/metrics" | grep -q '^argus_probe_uprobes_attached{probe="collectives"} [1-9]'; } && return 0
        sleep 0.1
    done
    echo "bench_torch_ab: the agent did not attach to the job in 30 s: $(tail -3 "$work/agent.log")" >&2
    exit 1
}
agent_off() { stop "$agent"; agent=""; }

: >"$work/blocks"
for ((i = 0; i < pairs; i++)); do
    order="A B"
    ((i % 2)) && order="B A"
    for mode in $order; do
        [[ $mode == B ]] && agent_on
        sleep 1
        from=$(mono)
        sleep "$block"
        echo "$mode $i $from $(mono)" >>"$work/blocks"
        [[ $mode == B ]] && agent_off
    done
done
{
    kill -KILL -- "-$job"
    wait "$job"
} 2>/dev/null
job=""
seen=$("$BIN/argusctl" --collector "127.0.0.1:$cport" jobs | awk '$1 == "bench-ab" {print $2 "r/" $5 "s"}')
/usr/bin/python3 - "$work/job.out" "$work/blocks" "$block" "$(nproc)" "$pin_desc" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "${seen:-0}" "${BENCH_RUNS:-}" <<'PY'
import random, statistics, sys
out, blocks_path, block_s, cpus, pin, load, seen, keep = sys.argv[1:9]
steps = []  # (start, dur, cpu)
for line in open(out):
    if line.startswith("JOBSTEP"):
        kv = dict(x.split("=") for x in line.split()[1:])
        steps.append((int(kv["start_ns"]), int(kv["dur_ns"]), int(kv.get("cpu_ns", 0))))
fig = {"A": {}, "B": {}}
rows = []
for line in open(blocks_path):
    mode, pair, t0, t1 = line.split()
    mine = [s for s in steps if int(t0) <= s[0] and s[0] + s[1] <= int(t1)]
    if not mine:
        sys.exit("bench_torch_ab: no step in block %s %s" % (mode, pair))
    step = statistics.median(s[1] for s in mine) / 1e6
    cpu = sum(s[2] for s in mine) / len(mine) / 1e6
    fig[mode][pair] = (step, cpu)
    rows.append("%s %s %d %.3f %.3f" % (mode, pair, len(mine), step, cpu))
if keep:
    open(keep, "w").write("\n".join(rows) + "\n")
keys = sorted(fig["A"], key=int)
rng = random.Random(13)

def figure(k):
    d = [fig["B"][p][k] - fig["A"][p][k] for p in keys]
    base = statistics.median(fig["A"][p][k] for p in keys)
    boot = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(2000))
    return base, 100 * statistics.median(d) / base, 100 * boot[49] / base, 100 * boot[1949] / base

s, c = figure(0), figure(1)
print("agent on a real PyTorch DDP job (4 ranks, gloo, CPU, one run, %d pairs of %s s blocks "
      "with and without the agent, %s CPUs%s, load %s): step time %+.2f%% (95%% CI %+.2f..%+.2f%%) "
      "of %.1f ms; rank CPU per step %+.2f%% (%+.2f..%+.2f%%) of %.1f ms; at the collector "
      "(ranks/rank-steps): %s"
      % (len(keys), block_s, cpus, pin, load, s[1], s[2], s[3], s[0], c[1], c[2], c[3], c[0], seen))
PY
