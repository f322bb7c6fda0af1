#!/usr/bin/env bash
# A rank that exits with an error, and torchelastic's restart of the job, on
# a real PyTorch DDP job under the real torchrun with --max_restarts 1
# (tests/bpf/torch_fault_case.sh; default agent and collector settings):
#  1. rank 1 calls sys.exit(3) at its next step: named CAUSE_EXITED ("exited
#     with code 3") within 30 s, nothing about the others (torchrun stops
#     them), the job RESTARTING once torchrun starts attempt 1;
#  2. attempt 1 (TORCHELASTIC_RESTART_COUNT=1, the same run id: the same job)
#     trains from step 0 again: the job RUNNING, its steps diagnosed as a new
#     epoch, nothing pages;
#  3. the job is stopped cleanly: ENDED, and no alert of it stays open.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; detection deadlines
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_fault_case.sh"

TORCH_DETECT_RESTARTS=1
torch_fault_start torchrun
pid1=$(cat "$T/log/pid.1")
TORCH_FAULT_FROM=$(torch_fault_now)
t=$TORCH_FAULT_FROM
torch_fault_inside 1 exit
wait_for "rank 1 (pid $pid1) to exit" 60 bash -c "! kill -0 $pid1"
rm -f "$T/fault" # attempt 1 must not do it again
mkdir -p "$T/attempt0" && mv "$T"/log/rank.* "$T/attempt0/" # attempt 1 writes its own
torch_fault_expect 1 CAUSE_EXITED "$t" "$TORCH_FAULT_EXIT_S"
grep -q 'exited with code 3' <(ctl --json stragglers --job "$TORCH_DETECT_JOB") ||
    fail "the death's evidence does not say exit code 3"

# attempt 1: new pids, steps from 0 again
wait_for "attempt 1's ranks" 180 bash -c "[[ -r $T/log/rank.0 && \$(cat $T/log/pid.1) != $pid1 ]]"
torch_fault_state RUNNING 120
TORCH_FAULT_FROM=$(torch_fault_now)
wait_for "20 steps of attempt 1" 180 bash -c "(( \$(cat $T/log/rank.0 2>/dev/null | wc -l) >= 20 ))"
ctl --json jobs | grep -q '"restart": *1' || fail "the job does not say attempt 1: $(ctl --json jobs)"
stop=$(($(torch_detect_done) + 5))
echo "$stop" >"$T/stop.tmp" && mv "$T/stop.tmp" "$T/stop"
wait "${TORCH_DETECT_PIDS[0]}" || fail "torchrun failed: $(tail -5 "$T/job.out")"
log "attempt 1 ended at step $(torch_detect_done)"
torch_fault_state ENDED 60
torch_fault_quiet_since "$TORCH_FAULT_FROM"
wait_every "every alert of the job resolved" 60 1 torch_fault_resolved CAUSE_EXITED
ctl --all stragglers --job "$TORCH_DETECT_JOB" || true
echo "torch fault ok: a rank exiting with code 3 named, torchelastic's restart a new epoch"
