#!/usr/bin/env bash
# A hang and a death on a real PyTorch DDP job launched by the real torchrun
# (tests/bpf/torch_fault_case.sh; default agent and collector settings):
#  1. rank 2 is stopped from outside (SIGSTOP) while the job trains: named
#     CAUSE_HANG within 60 s, nobody else paged, the job HUNG;
#  2. continued (SIGCONT): the job runs on, the hang's alert resolves, RUNNING;
#  3. rank 1 blocks in a read (of a FIFO) at its next step: named CAUSE_HANG
#     ("sleeping in read") within 60 s, nobody else; the test writes to the
#     FIFO and the job runs on;
#  4. rank 2 is killed (SIGKILL): named CAUSE_EXITED ("killed by SIGKILL")
#     within 30 s of its death, before and instead of anything about the
#     others' gloo errors; the job FAILED (torchrun tears the rest down).
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; detection deadlines
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_fault_case.sh"

torch_fault_start torchrun
t=$(torch_fault_now)
torch_fault_signal 2 STOP
torch_fault_expect 2 CAUSE_HANG "$t" "$TORCH_FAULT_HANG_S"
torch_fault_state HUNG

TORCH_FAULT_FROM=$(torch_fault_now)
torch_fault_signal 2 CONT
wait_every "the hang's alert resolved" 60 1 torch_fault_resolved CAUSE_HANG
torch_fault_state RUNNING
at=$(torch_detect_done)
wait_for "5 more steps of the job" 60 bash -c "(( \$(cat $T/log/rank.0 | wc -l) >= $at + 5 ))"

TORCH_FAULT_FROM=$(torch_fault_now)
t=$TORCH_FAULT_FROM
torch_fault_inside 1 read
torch_fault_expect 1 CAUSE_HANG "$t" "$TORCH_FAULT_HANG_S"
grep -q 'sleeping in read' <(ctl --json stragglers --job "$TORCH_DETECT_JOB") ||
    fail "the hang's evidence does not say rank 1 sleeps in read"
echo x >"$T/fifo"
wait_every "the second hang's alert resolved" 60 1 torch_fault_resolved CAUSE_HANG
at=$(torch_detect_done)
wait_for "5 more steps of the job" 60 bash -c "(( \$(cat $T/log/rank.0 | wc -l) >= $at + 5 ))"

TORCH_FAULT_FROM=$(torch_fault_now)
t=$TORCH_FAULT_FROM
torch_fault_signal 2 KILL
torch_fault_expect 2 CAUSE_EXITED "$t" "$TORCH_FAULT_EXIT_S"
grep -q 'killed by SIGKILL' <(ctl --json stragglers --job "$TORCH_DETECT_JOB") ||
    fail "the death's evidence does not say SIGKILL"
torch_fault_state FAILED 60
ctl --all stragglers --job "$TORCH_DETECT_JOB" || true
echo "torch fault ok: stopped, blocked in read and killed ranks named (torchrun)"
