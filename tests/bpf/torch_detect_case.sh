# One case of the detection tests on a real PyTorch job (sourced by
# tests/integration/torch_detect*.sh after tests/integration/lib.sh): the real
# collector and the real agent, both with their default settings (the agent
# with its default probes), and a 4-rank gloo DDP job on the CPU with default
# DDP buckets and no annotation (tests/bpf/torch_detect_job.py), launched
#   - exec: one process per rank with RANK/WORLD_SIZE and the run id
#     (TORCHELASTIC_RUN_ID) at exec, as torchrun starts them, or
#   - spawn: one torch.multiprocessing.spawn parent whose children set their
#     rank in os.environ; no job variable anywhere (the agent learns the
#     rank from the communicator and names the job after the parent).
#   - torchrun: the real launcher (python3 -m torch.distributed.run, c10d
#     rendezvous on a free port, run id torchjob-PID, TORCH_DETECT_RESTARTS
#     restarts, default 0), which starts the 4 ranks with RANK, WORLD_SIZE,
#     TORCHELASTIC_RUN_ID and TORCHELASTIC_RESTART_COUNT at exec.
# TORCH_DETECT_ENV (an array of NAME=VALUE) goes into the job's environment
# (e.g. FAULT_FILE for tests/bpf/torch_fault_case.sh).
#
# torch_detect_healthy LAUNCH: the job runs TORCH_DETECT_STEPS (250) steps and
# ends; nothing pages about it, nothing is SILENT, no suspect persisted, and
# at most one finding per 1,000 rank-steps (a spike of a step or a few
# included: a shared machine stalls; tests/bpf/torch_detect_check.py healthy).
#
# torch_detect_imbalance LAUNCH MODE: the job runs TORCH_DETECT_STEPS (100)
# steps of batches of 256 rows (compute, not the per-step overhead, sets the
# step time) with one rank on a 1.6x batch (tests/bpf/torch_ddp_steps_job.py
# BATCH, IMBALANCE): MODE fixed, rank TORCH_DETECT_VICTIM on every step; rotate, the
# next rank every 4 steps. Nothing pages: more work on a healthy host is the
# job owner's (IMBALANCE naming that rank, or for rotate DATA_SKEW), never
# HOST (torch_detect_check.py imbalance).
#
# torch_detect_throttle LAUNCH: once the collector has diagnosed some steps of
# every rank, one rank is slowed from outside by a cgroup CPU quota
# (lib.sh cgroup_cpu_limit; half of what it used, see torch_detect_quota); the first
# report that pages names that rank, cause CPU-starved host (CAUSE_HOST),
# within 60 s of the throttle, and nothing pages about any other rank, before
# or after (torch_detect_check.py throttle).
#
# Both then stop the job (tests/bpf/torch_detect_job.py runs until told to)
# and check the steps inferred for it against its own per-step log
# (tests/bpf/torch_steps_check.py), since a detection on wrong steps means
# nothing.
#
# Everything the case starts (the ranks too: mp.spawn children outlive a
# killed parent) and the cgroup are removed on exit, also after a failure.

TORCH_DETECT_VICTIM=${TORCH_DETECT_VICTIM:-2}
TORCH_DETECT_QUOTA=${TORCH_DETECT_QUOTA:-}
TORCH_DETECT_ENV=("${TORCH_DETECT_ENV[@]}")
TORCH_DETECT_IMBALANCE=${TORCH_DETECT_IMBALANCE:-} # the job's IMBALANCE (torch_ddp_steps_job.py)
TORCH_DETECT_BATCH=${TORCH_DETECT_BATCH:-32}       # and its BATCH

torch_detect_require() { # throttle?
    [[ $(id -u) == 0 ]] || skip "needs root for BPF and cgroups"
    [[ -r /sys/kernel/btf/vmlinux ]] || skip "no kernel BTF"
    /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
        skip "/usr/bin/python3 cannot import torch (python3-torch)"
    if [[ ${1:-} == throttle ]]; then
        local why
        why=$(cgroup_cpu_parent) || skip "no cgroup CPU controller: $why"
    fi
}

# Kill the ranks by the pids they wrote (not by name), then what lib.sh
# started, then the cgroup.
torch_detect_cleanup() {
    local f
    for f in "$T"/log/pid.*; do
        [[ -r $f ]] && kill -9 "$(cat "$f")" 2>/dev/null
    done
    cleanup
    cgroup_remove_all
}

torch_detect_start() { # LAUNCH
    local launch=$1 port r probes end
    trap torch_detect_cleanup EXIT
    start_collector "$T/store"
    probes=$("$BIN/argus-agent" --print-config |
        awk '/^\[/ {sec=$0} sec == "[probes]" && $1 == "enable" {gsub(/"/, "", $3); print $3}')
    [[ $probes == *collectives* && $probes == *sched* ]] || fail "default probes: '$probes'"
    start_agent "$T/spool" --probes.enable "$probes"
    mkdir -p "$T/log"
    port=$(free_port)
    TORCH_DETECT_PIDS=()
    if [[ $launch == spawn ]]; then
        env MASTER_PORT=$port OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" STOP_FILE="$T/stop" \
            IMBALANCE="$TORCH_DETECT_IMBALANCE" BATCH=$TORCH_DETECT_BATCH "${TORCH_DETECT_ENV[@]}" \
            /usr/bin/python3 "$REPO/tests/bpf/torch_detect_job.py" >"$T/job.out" 2>&1 &
        PIDS+=($!)
        TORCH_DETECT_PIDS+=($!)
    elif [[ $launch == torchrun ]]; then
        # Debian's torchrun (torch 1.13, Python 3.11) starts only with
        # --redirects and --tee; a worker's output goes to log_dir too
        env OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" STOP_FILE="$T/stop" \
            IMBALANCE="$TORCH_DETECT_IMBALANCE" BATCH=$TORCH_DETECT_BATCH "${TORCH_DETECT_ENV[@]}" \
            /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 \
            --log_dir "$T/torchrun" --nproc_per_node 4 --max_restarts "${TORCH_DETECT_RESTARTS:-0}" \
            --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$port" --rdzv_id "torchjob-$$" \
            "$REPO/tests/bpf/torch_detect_job.py" >"$T/job.out" 2>&1 &
        PIDS+=($!)
        TORCH_DETECT_PIDS+=($!)
    else
        for r in 0 1 2 3; do
            env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 TORCHELASTIC_RUN_ID=detectjob \
                MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
                STEPS_LOG_DIR="$T/log" STOP_FILE="$T/stop" IMBALANCE="$TORCH_DETECT_IMBALANCE" \
                BATCH=$TORCH_DETECT_BATCH "${TORCH_DETECT_ENV[@]}" \
                /usr/bin/python3 "$REPO/tests/bpf/torch_detect_job.py" >"$T/job.$r.out" 2>&1 &
            PIDS+=($!)
            TORCH_DETECT_PIDS+=($!)
        done
    fi
    # generous: 4 python processes importing torch on a loaded 2-core machine
    end=$((SECONDS + 300))
    until (($(ls "$T/log" | grep -c '^pid') == 4)); do
        ((SECONDS < end)) || { tail -n 20 "$T"/job*.out; fail "the job's 4 ranks did not start in 300 s"; }
        kill -0 "${TORCH_DETECT_PIDS[0]}" 2>/dev/null || { tail -n 20 "$T"/job*.out; fail "the job's launcher ended before its ranks started"; }
        sleep 0.5
    done
    # the job's name at the collector: the run id, or (spawn) the agent's name
    # for it; found by the pids of its ranks (agents see every job on the host)
    wait_every "the job at the collector" 60 1 torch_detect_find_job
    log "job $TORCH_DETECT_JOB ($launch launch) known at the collector"
}

# torch_detect_find_job: sets TORCH_DETECT_JOB to the job at the collector
# whose rank 0 has the pid our rank 0 wrote.
torch_detect_find_job() {
    local job pid0
    pid0=$(cat "$T/log/pid.0")
    for job in $(ctl jobs | awk 'NR > 1 {print $1}'); do
        if ctl ranks --job "$job" | awk -v p="$pid0" '$1 == 0 && $6 == p {ok=1} END {exit !ok}'; then
            TORCH_DETECT_JOB=$job
            return 0
        fi
    done
    return 1
}

# The number of steps the job logged so far (rank 0's log lines).
torch_detect_done() { cat "$T/log/rank.0" 2>/dev/null | wc -l; }

# torch_detect_stored N: every rank has N steps stored at the collector.
torch_detect_stored() {
    ctl steps --job "$TORCH_DETECT_JOB" --limit 100000 | awk -v n="$1" \
        'NR > 1 && $1 ~ /^[0-9]+$/ {c[$2]++} END {k=0; for (r in c) if (c[r] >= n) k++; exit k != 4}'
}

torch_detect_reports() { # FILE
    ctl --json stragglers --job "$TORCH_DETECT_JOB" >"$1" || fail "argusctl stragglers failed"
}

# torch_detect_finish: stops the job a few steps on (every rank at the same
# step, tests/bpf/torch_detect_job.py), waits for it to end as a job ends and
# for the collector to diagnose all of it (every step stored, none open), then
# checks the inferred steps against the job's own log
# (tests/bpf/torch_steps_check.py: count within 1%, one numbering on every
# rank, mean step time within 3%).
torch_detect_finish() {
    local stop p n
    stop=$(($(torch_detect_done) + 5))
    echo "$stop" >"$T/stop.tmp" && mv "$T/stop.tmp" "$T/stop"
    for p in "${TORCH_DETECT_PIDS[@]}"; do
        wait "$p" || fail "the job failed: $(tail -5 "$T"/job.*out)"
    done
    n=$(torch_detect_done)
    log "job done: $n steps"
    ((n == stop)) || fail "the job ran $n steps, told to stop at $stop"
    wait_every "the job's steps at the collector" 60 1 torch_detect_stored $((n * 9 / 10))
    wait_every "every step closed" 60 1 bash -c \
        "curl -s 127.0.0.1:$HPORT/metrics | awk '\$1 == \"argus_diag_open_steps\" && \$2 == 0 {ok=1} END {exit !ok}'"
    sleep 2 # the last batches and the reports of the last steps
    ctl --json steps --job "$TORCH_DETECT_JOB" --limit 100000 >"$T/steps.json" ||
        fail "argusctl steps failed"
    # --late: the count from each rank's first numbered step (under load a
    # rank can lock a few steps after the others: agent_torch_steps*.sh check
    # the count from the job's start)
    /usr/bin/python3 "$REPO/tests/bpf/torch_steps_check.py" "$T/log" "$T/steps.json" 4 --late ||
        fail "inferred steps disagree with the job's own"
}

# torch_detect_run STEPS: the job runs STEPS steps, then torch_detect_finish;
# the reports about it are in $T/reports.json.
torch_detect_run() {
    local steps=$1
    wait_for "$steps steps of the job" 300 bash -c \
        "(( \$(cat $T/log/rank.0 2>/dev/null | wc -l) >= $steps ))"
    torch_detect_finish
    torch_detect_reports "$T/reports.json"
    ctl --all stragglers --job "$TORCH_DETECT_JOB" || true
}

torch_detect_healthy() { # LAUNCH
    local launch=$1 rank_steps
    torch_detect_require
    torch_detect_start "$launch"
    torch_detect_run "${TORCH_DETECT_STEPS:-250}"
    rank_steps=$(cat "$T"/log/rank.* | wc -l)
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" healthy "$T/reports.json" \
        --rank-steps "$rank_steps" --log "$T/log" || {
        torch_detect_diagnostics
        fail "reports about a healthy job"
    }
}

torch_detect_imbalance() { # LAUNCH MODE
    local launch=$1 mode=$2
    torch_detect_require
    case $mode in
    fixed) TORCH_DETECT_IMBALANCE=fixed:$TORCH_DETECT_VICTIM:1.6 ;;
    rotate) TORCH_DETECT_IMBALANCE=rotate:4:1.6 ;;
    *) fail "imbalance mode '$mode': fixed or rotate" ;;
    esac
    TORCH_DETECT_BATCH=256
    torch_detect_start "$launch"
    torch_detect_run "${TORCH_DETECT_STEPS:-100}"
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" imbalance "$T/reports.json" \
        --mode "$mode" --victim "$TORCH_DETECT_VICTIM" || {
        torch_detect_diagnostics
        fail "a job with $mode imbalance was paged or blamed on its host"
    }
}

# What the agent and the collector saw, for a failure.
torch_detect_diagnostics() {
    echo "--- argusctl stragglers --all"
    ctl --all stragglers --job "$TORCH_DETECT_JOB" || true
    ctl --json steps --job "$TORCH_DETECT_JOB" --limit 100000 >"$T/steps.json" || true
    echo "--- argusctl jobs"
    ctl jobs || true
    echo "--- agent /metrics"
    curl -s "127.0.0.1:$APORT/metrics" | grep -E '^argus_(agent_ranks|agent_steps|probe_tags|steps_inferred|agent_untracked|agent_rank_statuses|agent_rank_exits)' || true
    echo "--- collector /metrics"
    curl -s "127.0.0.1:$HPORT/metrics" | grep -E '^argus_diag_(steps_closed|open_steps|lag|watermark|statuses|hangs|jobs)' || true
    echo "--- agent log (liveness)"
    grep -E 'liveness' "$T/agent.log" | tail -20
    echo "--- collector log"
    tail -5 "$T/collector.log"
}

# torch_detect_quota PID: the CPU quota (us per 100 ms) that leaves PID half
# the CPU time it got over the last 3 s, at most 15 ms (15%) and at least
# 3 ms: a neighbour taking half its CPU, whatever the load of the machine
# (4 ranks on 2 idle cores get 50% each: 15% slows the rank 3x; on a busy
# machine they get much less, and a fixed 15% would not slow them at all,
# while a third of their share slows them 5x: 24 of those steps, what the
# collector needs to page, take over a minute). TORCH_DETECT_QUOTA overrides
# it.
torch_detect_quota() {
    local pid=$1 hz a b q
    if [[ -n $TORCH_DETECT_QUOTA ]]; then
        echo "$TORCH_DETECT_QUOTA"
        return
    fi
    hz=$(getconf CLK_TCK)
    a=$(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat")
    sleep 3
    b=$(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat")
    q=$(((b - a) * 100000 / hz / 3 / 2)) # us per 100 ms, half of it
    ((q > 15000)) && q=15000
    ((q < 3000)) && q=3000
    echo "$q"
}

torch_detect_paged() {
    torch_detect_reports "$T/poll.json"
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" paged "$T/poll.json"
}

torch_detect_throttle() { # LAUNCH
    local launch=$1 victim=$TORCH_DETECT_VICTIM pid quota t0 at end
    torch_detect_require throttle
    torch_detect_start "$launch"
    wait_every "45 steps of every rank at the collector" 120 1 torch_detect_stored 45
    pid=$(cat "$T/log/pid.$victim")
    quota=$(torch_detect_quota "$pid")
    t0=$(date +%s%N)
    cgroup_cpu_limit "rank$victim" "$quota" 100000 "$pid" ||
        fail "could not put rank $victim (pid $pid) under a CPU quota"
    at=$(torch_detect_done)
    log "rank $victim (pid $pid) limited to $quota us of CPU every 100 ms" \
        "($CGROUP_DIR) at job step $at"
    end=$((SECONDS + 60))
    until torch_detect_paged || ((SECONDS >= end)); do sleep 1; done
    if torch_detect_paged; then
        log "paged at job step $(torch_detect_done)"
        # 20 more steps of the job, half the persistence window: nobody else pages
        wait_for "20 more steps of the job" 120 bash -c \
            "(( \$(cat $T/log/rank.0 | wc -l) >= $(torch_detect_done) + 20 ))"
    else
        log "nothing paged 60 s after the throttle (job step $(torch_detect_done))"
        torch_detect_diagnostics
    fi
    torch_detect_reports "$T/reports.json"
    ctl --all stragglers --job "$TORCH_DETECT_JOB" || true
    local named=0
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" throttle "$T/reports.json" \
        --victim "$victim" --throttle-ns "$t0" --deadline 60 --log "$T/log" --at-step "$at" ||
        named=1
    # steps numbered wrong (the first failure to look at) fail here
    torch_detect_finish
    ((named == 0)) || fail "rank $victim was not named as it should be"
}
