# Faults that stop a real PyTorch job (sourced by tests/integration/torch_fault_*.sh
# after tests/integration/lib.sh): the real collector and agent with their
# default settings, the 4-rank gloo DDP job of tests/bpf/torch_detect_case.sh
# (no annotation), launched by the real torchrun or by mp.spawn, and a fault
# made on one rank while it runs:
#   - from outside: stopped (SIGSTOP), continued (SIGCONT), killed (SIGKILL);
#   - from inside, at the rank's next step (tests/bpf/torch_ddp_steps_job.py
#     FAULT_FILE): blocked in a read of a FIFO (until the test writes to it),
#     spinning in Python, exiting with an error, a 30 s checkpoint of every
#     rank outside collectives.
# Each fault is checked in its own time window (tests/bpf/torch_detect_check.py
# fault): the first page after it names only that rank, with its cause
# (CAUSE_HANG within TORCH_FAULT_HANG_S = 60 s of the hang, CAUSE_EXITED
# within TORCH_FAULT_EXIT_S = 30 s of the death), and nothing else pages in
# the window; the job's state at the collector follows (HUNG, RUNNING again,
# FAILED or RESTARTING). A checkpoint pages nobody.

source "$REPO/tests/bpf/torch_detect_case.sh"

TORCH_FAULT_HANG_S=${TORCH_FAULT_HANG_S:-60}
TORCH_FAULT_EXIT_S=${TORCH_FAULT_EXIT_S:-30}
TORCH_FAULT_FROM=0 # start of the current check window (unix ns)

torch_fault_now() { date +%s%N; }

# torch_fault_start LAUNCH: the job with a fault file and a FIFO to block in.
torch_fault_start() {
    mkfifo "$T/fifo" || fail "mkfifo"
    TORCH_DETECT_ENV=(FAULT_FILE="$T/fault" FAULT_FIFO="$T/fifo")
    torch_detect_require
    torch_detect_start "$1"
    wait_every "20 steps of every rank at the collector" 180 1 torch_detect_stored 20
}

# torch_fault_inside RANK ACTION: the rank does ACTION at its next step.
torch_fault_inside() {
    echo "$1 $2" >"$T/fault.tmp" && mv "$T/fault.tmp" "$T/fault"
    log "rank $1: $2 at its next step (job step $(torch_detect_done))"
}

# torch_fault_signal RANK SIGNAL: from outside, by the pid the rank wrote.
torch_fault_signal() {
    local pid
    pid=$(cat "$T/log/pid.$1")
    kill -"$2" "$pid" || fail "kill -$2 rank $1 (pid $pid)"
    log "rank $1 (pid $pid): SIG$2 (job step $(torch_detect_done))"
}

torch_fault_paged_since() { # SINCE_NS
    torch_detect_reports "$T/poll.json"
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" paged "$T/poll.json" --since-ns "$1"
}

# torch_fault_expect RANK CAUSE SINCE_NS DEADLINE_S: wait for the first page
# after SINCE (up to DEADLINE + 15 s), then check the window
# [TORCH_FAULT_FROM, now] with torch_detect_check.py fault.
torch_fault_expect() {
    local rank=$1 cause=$2 since=$3 deadline=$4 end
    end=$((SECONDS + deadline + 15))
    until torch_fault_paged_since "$since" || ((SECONDS >= end)); do sleep 1; done
    sleep 3 # a second page in the window would come now
    torch_detect_reports "$T/reports.json"
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" fault "$T/reports.json" \
        --victim "$rank" --cause "$cause" --since-ns "$since" --deadline "$deadline" \
        --from-ns "$TORCH_FAULT_FROM" || {
        torch_detect_diagnostics
        ctl jobs || true
        fail "rank $rank was not named as $cause as it should be"
    }
}

# torch_fault_quiet_since FROM_NS: nothing paged since FROM.
torch_fault_quiet_since() {
    torch_detect_reports "$T/reports.json"
    /usr/bin/python3 "$REPO/tests/bpf/torch_detect_check.py" quiet "$T/reports.json" \
        --since-ns "$1" || fail "a page during a quiet window"
}

# torch_fault_is_state STATE: the job's state at the collector (argusctl
# --json jobs) is JOB_STATE_<STATE>.
torch_fault_is_state() {
    ctl --json jobs | /usr/bin/python3 -c "
import json, sys
jobs = json.load(sys.stdin).get('jobs', [])
sys.exit(0 if any(j['job'] == '$TORCH_DETECT_JOB' and j.get('state') == 'JOB_STATE_$1' for j in jobs) else 1)"
}

# torch_fault_state STATE [TIMEOUT]: wait for it.
torch_fault_state() {
    wait_every "job $TORCH_DETECT_JOB in state $1" "${2:-30}" 1 torch_fault_is_state "$1"
    log "job $TORCH_DETECT_JOB: $1"
}

# torch_fault_resolved CAUSE: no alert of the job with CAUSE is open.
torch_fault_resolved() {
    ctl --json alerts --job "$TORCH_DETECT_JOB" | /usr/bin/python3 -c "
import json, sys
alerts = json.load(sys.stdin).get('alerts', [])
sys.exit(1 if any(a.get('cause') == '$1' and a.get('status') in ('ALERT_STATUS_PENDING', 'ALERT_STATUS_FIRING') for a in alerts) else 0)"
}
