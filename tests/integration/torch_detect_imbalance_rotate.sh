#!/usr/bin/env bash
# Detection on a real PyTorch gloo DDP job (4 ranks, CPU, default DDP buckets,
# no annotation) launched torchrun-style, under the real agent and collector
# (default settings), where a 1.6x batch moves to the next rank every 4
# steps (data skew): nothing pages; DATA_SKEW or no finding, never HOST or
# a rank's IMBALANCE. See tests/bpf/torch_detect_case.sh.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_detect_case.sh"
torch_detect_imbalance exec rotate
echo "torch detect ok: rotating workload imbalance pages nobody"
