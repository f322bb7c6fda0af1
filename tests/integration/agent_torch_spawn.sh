#!/usr/bin/env bash
# Discovery of a real PyTorch DDP job (Debian python3-torch, CPU, gloo,
# default buckets, 4 ranks) launched two ways, under the real agent with its
# default probes: torch.multiprocessing.spawn with RANK set in each child's
# os.environ (the rank comes from the communicator the child creates, and
# without a job variable the job from the store its process group uses), and
# one process per rank with RANK at exec (torchrun-style). Each time the
# collector must know all 4 ranks of the job, each with its own pid.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || skip "needs root for BPF"
[[ -r /sys/kernel/btf/vmlinux ]] || skip "no BTF"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "no python3-torch"

start_collector "$T/store"
probes=$("$BIN/argus-agent" --print-config | awk '/^\[/ {sec=$0} sec == "[probes]" && $1 == "enable" {gsub(/"/, "", $3); print $3}')
start_agent "$T/spool" --probes.enable "$probes" --discovery.scan_interval 200ms \
    --batch.max_age 200ms

# check_ranks JOB MODE: the 4 ranks of JOB at the collector are the job's pids
check_ranks() {
    wait_for "4 ranks of $1 at the collector" 60 bash -c \
        "[[ \$($BIN/argusctl --collector 127.0.0.1:$CPORT ranks --job $1 | awk 'NR > 1' | wc -l) == 4 ]]"
    ctl ranks --job "$1" | tee "$T/ranks.$1"
    for r in 0 1 2 3; do
        pid=$(cat "$T/pids.$2/rank.$r")
        awk -v r="$r" -v p="$pid" '$1 == r && $3 == 4 && $6 == p' "$T/ranks.$1" | grep -q . \
            || fail "$2: rank $r (pid $pid) not at the collector as rank $r of 4"
    done
}

# run_job MODE JOB [env...]: run the job to its end and check its ranks
run_job() {
    local mode=$1 job=$2 port
    shift 2
    port=$(free_port)
    mkdir -p "$T/pids.$mode"
    if [[ $mode == spawn ]]; then
        env ARGUS_JOB="$job" ARGUS_PIDS_DIR="$T/pids.$mode" STEPS=60 OMP_NUM_THREADS=1 "$@" \
            /usr/bin/python3 "$REPO/tests/bpf/torch_spawn_job.py" "$port" >"$T/job.$mode.out" 2>&1 &
        jobs_pids=($!)
        PIDS+=($!)
    else
        jobs_pids=()
        for r in 0 1 2 3; do
            env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 TORCHELASTIC_RUN_ID="$job" \
                ARGUS_PIDS_DIR="$T/pids.$mode" STEPS=60 OMP_NUM_THREADS=1 "$@" \
                /usr/bin/python3 "$REPO/tests/bpf/torch_spawn_job.py" "$port" >"$T/job.$mode.$r.out" 2>&1 &
            jobs_pids+=($!)
            PIDS+=($!)
        done
    fi
    for p in "${jobs_pids[@]}"; do
        wait "$p" || fail "$mode job failed: $(tail -5 "$T"/job.$mode*.out)"
    done
    [[ -z $job ]] || check_ranks "$job" "$mode"
}

run_job spawn spawnjob
grep -q "is rank 3 of 4 of job spawnjob (from communicator" "$T/agent.log" \
    || fail "the log does not say where the spawned rank came from"
[[ $(metric "$APORT" 'argus_probe_communicator_inits_total{probe="collectives"}') -ge 4 ]] \
    || fail "communicator creations not counted"
run_job exec execjob
# a spawned job without any job variable: its ranks are named by the store
# their process group was made over (c10d::TCPStore at MASTER_ADDR 127.0.0.1:
# loopback, so the node), read from its constructor
run_job spawn ""
store_job=$(ctl jobs | awk '$1 ~ /^torch-testnode:[0-9]+$/ {print $1}' | head -1)
[[ -n $store_job ]] || fail "no job named after the store's address: $(ctl jobs)"
check_ranks "$store_job" spawn
grep -q "is rank 3 of 4 of job $store_job (from communicator, job from TCPStore)" "$T/agent.log" \
    || fail "the spawned rank's job did not come from its store: $(grep 'is rank' "$T/agent.log")"
[[ $(metric "$APORT" 'argus_probe_stores_total{probe="collectives"}') -ge 4 ]] \
    || fail "stores not counted"
echo "torch spawn discovery ok"
