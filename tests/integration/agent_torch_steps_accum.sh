#!/usr/bin/env bash
# Step numbering without annotation on a real PyTorch gloo DDP job (4 ranks,
# CPU, default DDP settings): gradient accumulation, 2 micro-steps per step (no_sync).
# The real agent infers the steps from the collective sequence (gloo's own
# tags); checked against the job's own per-step log: count within 1%, the
# same number for the same real step on every rank, mean step time within 3%.
# See tests/bpf/torch_steps_case.sh.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; step times checked within 3%
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_steps_case.sh"
torch_steps_case 2 0
echo "torch steps ok: gradient accumulation, 2 micro-steps per step (no_sync)"
