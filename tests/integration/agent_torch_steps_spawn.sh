#!/usr/bin/env bash
# Step numbering without annotation on a real PyTorch gloo DDP job (4 ranks,
# CPU, default DDP settings) launched with torch.multiprocessing.spawn, each
# child setting its rank in os.environ (the agent learns it from the
# communicator the child creates). Checked against the job's own per-step
# log: count within 1%, the same number for the same real step on every
# rank, mean step time within 3%. See tests/bpf/torch_steps_case.sh.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; step times checked within 3%
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_steps_case.sh"
torch_steps_case 1 0 spawn
echo "torch steps ok: torch.multiprocessing.spawn, ranks set in the children"
