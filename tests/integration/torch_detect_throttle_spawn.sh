#!/usr/bin/env bash
# Detection on a real PyTorch gloo DDP job (4 ranks, CPU, default DDP buckets,
# no annotation) launched with torch.multiprocessing.spawn, each child setting
# its rank in os.environ and no job variable, under the real agent (default
# probes) and the real collector (default settings): one rank slowed from
# outside by a cgroup CPU quota is named, cause CPU-starved host, within 60 s
# of the throttle, and nobody else pages. See tests/bpf/torch_detect_case.sh.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; a detection deadline
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_detect_case.sh"
torch_detect_throttle spawn
echo "torch detect ok: CPU-throttled rank named, mp.spawn launch"
