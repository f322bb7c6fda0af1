#!/usr/bin/env bash
# The agent's threads under a real PyTorch job: context switches per second
# (voluntary: its own wakeups; involuntary: preempted) and CPU, per thread,
# from /proc/PID/task/*/status and stat over DURATION s (20). The job is
# tests/e2e/demo_job.py, 4 ranks, gloo, one process per rank with RANK at
# exec; the agent starts under it with its default probes (BENCH_PROBES
# picks others) and is measured once it has run 15 s.
# Needs root (eBPF probes), python3-torch and BTF; says why and exits 0
# without them (make bench runs every script).
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${ARGUS_BUILD:-$PWD/build}/bin
dur=${DURATION:-20}
[[ $(id -u) == 0 ]] || { echo "skip: needs root (the agent's eBPF probes)"; exit 0; }
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "skip: /usr/bin/python3 has no torch"; exit 0; }
[[ -r /sys/kernel/btf/vmlinux ]] || { echo "skip: no kernel BTF"; exit 0; }
work=$(mktemp -d /tmp/argus-bench-sw.XXXXXX)
col="" agent="" job=""
cleanup() {
    [[ -z $job ]] || kill -KILL -- "-$job" 2>/dev/null
    [[ -z $agent ]] || { kill -TERM "$agent"; wait "$agent"; } 2>/dev/null
    [[ -z $col ]] || { kill -TERM "$col"; wait "$col"; } 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cport=$(port) aport=$(port)
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$cport" --grpc.plaintext true --http.listen "" \
    --store.dir "$work/store" >"$work/collector.log" 2>&1 &
col=$!
# shellcheck disable=SC2016 # expanded by the inner bash
ARGUS_JOB=bench-sw STEPS=1000000 WARM=10 OMP_NUM_THREADS=1 WORLD=4 MASTER_PORT=$(port) \
    setsid bash -c 'for ((r = 0; r < WORLD; r++)); do
        RANK=$r WORLD_SIZE=$WORLD /usr/bin/python3 tests/e2e/demo_job.py "$MASTER_PORT" &
    done; wait' >"$work/job.out" 2>&1 &
job=$!
sleep 15
"$BIN/argus-agent" --collector.address "127.0.0.1:$cport" --grpc.plaintext true --http.listen "127.0.0.1:$aport" \
    --spool.dir "$work/spool" --cupti.socket "$work/cupti.sock" \
    ${BENCH_PROBES+--probes.enable "$BENCH_PROBES"} >"$work/agent.log" 2>&1 &
agent=$!
sleep 15
kill -0 "$agent" 2>/dev/null || { echo "bench_agent_switches: the agent exited: $(tail -3 "$work/agent.log")" >&2; exit 1; }
snap() { # tid comm voluntary involuntary cpu-ticks
    for t in /proc/"$agent"/task/*; do
        echo "${t##*/} $(tr ' ' _ <"$t/comm") $(awk '/^voluntary_ctxt/ {v = $2} /^nonvoluntary_ctxt/ {n = $2} END {print v, n}' "$t/status") $(awk '{print $14 + $15}' "$t/stat")"
    done | sort
}
snap >"$work/s1"
sleep "$dur"
snap >"$work/s2"
hz=$(getconf CLK_TCK)
join "$work/s1" "$work/s2" | awk -v d="$dur" -v hz="$hz" '
    { v = ($7 - $3) / d; n = ($8 - $4) / d; c = ($9 - $5) / hz / d * 100
      if (v + n + c > 0.05) printf "  thread %-16s %6.1f voluntary/s %6.1f involuntary/s %5.2f%% of a core\n", $2, v, n, c
      tv += v; tn += n; tc += c }
    END { printf "agent under the 4-rank job: %.1f voluntary + %.1f involuntary context switches/s, %.2f%% of a core\n", tv, tn, tc }'
