#!/usr/bin/env bash
# Detection on a real PyTorch gloo DDP job (4 ranks, CPU, default DDP buckets,
# no annotation) launched torchrun-style, under the real agent and collector
# (default settings), where rank 0 (the one that also serves the rendezvous store) runs a 1.6x batch on every step and no
# fault is injected: it arrives late at every all-reduce with the host
# counters of its peers. Nothing pages (no HOST, no COMPUTE): more work is
# the job owner's, a finding (IMBALANCE) naming that rank at most. See
# tests/bpf/torch_detect_case.sh.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores
TORCH_DETECT_VICTIM=${TORCH_DETECT_VICTIM:-0} # the issue's case
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_detect_case.sh"
torch_detect_imbalance exec fixed
echo "torch detect ok: fixed workload imbalance pages nobody, not blamed on the host"
