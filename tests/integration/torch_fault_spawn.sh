#!/usr/bin/env bash
# A checkpoint, a hang and a death on a real PyTorch DDP job launched by
# torch.multiprocessing.spawn, the rank set in each child
# (tests/bpf/torch_fault_case.sh; default agent and collector settings):
#  1. every rank checkpoints for 35 s outside collectives (sleeping, from the
#     same step): nothing pages, longer than the hang bound (30 s);
#  2. rank 1 spins in Python at its next step: named CAUSE_HANG ("on CPU")
#     within 60 s, nobody else paged, the job HUNG;
#  3. rank 1 is killed (SIGKILL) while it spins: named CAUSE_EXITED within
#     30 s of its death, nothing about the others' gloo errors (mp.spawn's
#     parent then ends them); the job FAILED.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; detection deadlines
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_fault_case.sh"

export CKPT_SECONDS=35
torch_fault_start spawn
at=$(($(torch_detect_done) + 3))
TORCH_FAULT_FROM=$(torch_fault_now)
torch_fault_inside '*' "ckpt $at"
wait_for "the checkpoint to start" 60 bash -c "(( \$(cat $T/log/rank.0 | wc -l) >= $at ))"
sleep "$CKPT_SECONDS"
wait_for "5 steps after the checkpoint" 60 bash -c "(( \$(cat $T/log/rank.0 | wc -l) >= $at + 5 ))"
torch_fault_quiet_since "$TORCH_FAULT_FROM"
torch_fault_is_state HUNG && fail "a checkpoint made the job HUNG"
log "checkpoint of $CKPT_SECONDS s: nothing paged"

TORCH_FAULT_FROM=$(torch_fault_now)
t=$TORCH_FAULT_FROM
torch_fault_inside 1 spin
torch_fault_expect 1 CAUSE_HANG "$t" "$TORCH_FAULT_HANG_S"
grep -q 'on CPU' <(ctl --json stragglers --job "$TORCH_DETECT_JOB") ||
    fail "the hang's evidence does not say rank 1 is on a CPU"
torch_fault_state HUNG

TORCH_FAULT_FROM=$(torch_fault_now)
t=$TORCH_FAULT_FROM
torch_fault_signal 1 KILL
torch_fault_expect 1 CAUSE_EXITED "$t" "$TORCH_FAULT_EXIT_S"
torch_fault_state FAILED 60
ctl --all stragglers --job "$TORCH_DETECT_JOB" || true
echo "torch fault ok: checkpoint quiet, spinning and killed ranks named (mp.spawn)"
