#!/usr/bin/env bash
# Detection on a real PyTorch gloo DDP job (4 ranks, CPU, default DDP buckets,
# no annotation) launched torchrun-style (RANK, WORLD_SIZE and the run id at
# exec), under the real agent (default probes) and the real collector (default
# settings): nothing pages about a healthy job, nothing SILENT, nothing
# persisted; its inferred steps are its own. See
# tests/bpf/torch_detect_case.sh.
# test-cpu: alone: a real PyTorch job, 4 ranks on all cores, that must show no finding: a
# neighbour starting would make the whole job slower (a true job regression)
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_detect_case.sh"
torch_detect_healthy exec
echo "torch detect ok: healthy job, torchrun-style launch, nothing pages"
