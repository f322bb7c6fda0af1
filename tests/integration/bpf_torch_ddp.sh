#!/usr/bin/env bash
# The PyTorch job of bpf_torch_steps.sh with DistributedDataParallel (one
# bucketed allreduce per step, launched asynchronously from backward and
# waited on through a future, which no probe sees): steps are still found,
# and each rank's mean step time over the detected window agrees with the
# job's within 5%. Single steps are not checked: the cut point (the
# allreduce's return) moves with the backward pass.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores; step times checked within 5%
cd "$(dirname "$0")/../.."
DDP=1 STRICT=0 exec tests/integration/bpf_torch_steps.sh
