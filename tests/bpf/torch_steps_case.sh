# One case of the step-numbering tests on a real PyTorch job (sourced by
# tests/integration/agent_torch_steps*.sh after tests/integration/lib.sh):
# the real collector and the real agent with its default probes, and a
# 4-rank gloo DDP job (tests/bpf/torch_ddp_steps_job.py, one process per
# rank with RANK/WORLD_SIZE at exec, no annotation) that logs its own steps;
# then the inferred steps stored at the collector are checked against the
# job's log (tests/bpf/torch_steps_check.py: count within 1%, one numbering
# on every rank, mean step time within 3%).
#
# torch_steps_case ACCUM LATE [spawn]: ACCUM micro-steps per step (no_sync),
# with LATE=1 the agent starts only after the job has run 60 steps, and with
# spawn the job is one torch.multiprocessing.spawn parent whose children set
# their rank in os.environ (the agent learns it from the communicator).
# TORCH_STEPS_GATE=1: the ranks make their group only once the agent's
# collectives uprobes are attached (a test of what it reads then; on a
# loaded machine the attach can trail the job's import of torch).

torch_steps_require() {
    [[ $(id -u) == 0 ]] || skip "needs root for BPF"
    [[ -r /sys/kernel/btf/vmlinux ]] || skip "no BTF"
    /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "no python3-torch"
}

torch_steps_agent() {
    local probes
    probes=$("$BIN/argus-agent" --print-config |
        awk '/^\[/ {sec=$0} sec == "[probes]" && $1 == "enable" {gsub(/"/, "", $3); print $3}')
    [[ $probes == *collectives* ]] || fail "default probes: '$probes'"
    start_agent "$T/spool" --probes.enable "$probes" --discovery.scan_interval 200ms \
        --batch.max_age 200ms
}

# The agent's collectives uprobes are attached.
torch_steps_uprobes_in() {
    local n
    n=$(curl -s "127.0.0.1:$APORT/metrics" |
        awk '$1 == "argus_probe_uprobes_attached{probe=\"collectives\"}" {print $2}')
    ((${n:-0} > 0))
}

# The job's step count so far (rank 0's log lines).
torch_steps_done() { cat "$T/log/rank.0" 2>/dev/null | wc -l; }

torch_steps_case() {
    local accum=$1 late=$2 launch=${3:-exec} steps=${STEPS:-300} port r p
    torch_steps_require
    start_collector "$T/store"
    ((late)) || torch_steps_agent
    mkdir -p "$T/log"
    port=$(free_port)
    local job_pids=() gate=""
    [[ ${TORCH_STEPS_GATE:-} == 1 ]] && gate=$T/gate
    export GATE_FILE=$gate
    if [[ $launch == spawn ]]; then
        env ARGUS_JOB=stepsjob MASTER_PORT=$port OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" \
            STEPS=$steps ACCUM=$accum WIDTH=384 /usr/bin/python3 \
            "$REPO/tests/bpf/torch_ddp_steps_job.py" >"$T/job.out" 2>&1 &
        PIDS+=($!)
        job_pids+=($!)
    fi
    for r in 0 1 2 3; do
        [[ $launch == spawn ]] && break
        env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 ARGUS_JOB=stepsjob MASTER_ADDR=127.0.0.1 \
            MASTER_PORT=$port OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" STEPS=$steps \
            ACCUM=$accum WIDTH=384 /usr/bin/python3 "$REPO/tests/bpf/torch_ddp_steps_job.py" \
            >"$T/job.$r.out" 2>&1 &
        PIDS+=($!)
        job_pids+=($!)
    done
    if [[ -n $gate ]]; then
        wait_for "the agent's collectives uprobes" 60 torch_steps_uprobes_in
        touch "$gate"
    fi
    if ((late)); then
        wait_for "60 steps of the job" 300 bash -c "(( \$(cat $T/log/rank.0 2>/dev/null | wc -l) >= 60 ))"
        log "agent starts at job step $(torch_steps_done)"
        torch_steps_agent
    fi
    for p in "${job_pids[@]}"; do
        wait "$p" || fail "rank exited with an error: $(tail -3 "$T"/job.*.out)"
    done
    log "job done: $(torch_steps_done) steps"
    # the agent emits the last steps at its next tick and ships them within 200 ms
    local want=$((steps * 9 / 10 * 4))
    ((late)) && want=$(((steps - 60) * 8 / 10 * 4))
    wait_for "inferred steps at the collector" 30 bash -c \
        "$BIN/argusctl --collector 127.0.0.1:$CPORT jobs | awk '\$1 == \"stepsjob\" && \$5 >= $want {ok=1} END {exit !ok}'"
    # then until the count stops moving (3 s without a new step, 20 s at most):
    # on a loaded machine a rank's last batches can trail the others' by seconds
    local n last=-1 still=0 end=$((SECONDS + 20))
    while ((still < 3 && SECONDS < end)); do
        n=$("$BIN/argusctl" --collector 127.0.0.1:$CPORT jobs | awk '$1 == "stepsjob" {print $5}')
        if [[ $n == "$last" ]]; then still=$((still + 1)); else still=0 last=$n; fi
        sleep 1
    done
    ctl --json steps --job stepsjob --limit 100000 >"$T/steps.json" || fail "argusctl steps"
    /usr/bin/python3 "$REPO/tests/bpf/torch_steps_check.py" "$T/log" "$T/steps.json" 4 \
        $( ((late)) && echo --late) || {
        grep -E " steps: | the realtime clock " "$T/agent.log" | tail -20 # locks, unlocks, clock sets
        fail "inferred steps disagree with the job's own"
    }
    curl -s "127.0.0.1:$APORT/metrics" | grep -E "^argus_(probe_tags_matched_total|agent_ranks) " || true
}
