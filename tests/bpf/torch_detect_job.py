"""A real PyTorch DDP job for the detection tests
(tests/integration/torch_detect*.sh, tests/bpf/torch_detect_case.sh): the
job of tests/bpf/torch_ddp_steps_job.py (CPU, gloo, default
DistributedDataParallel buckets: two bucket all-reduces per step, no
annotation, its own per-step log), run until told to stop rather than for a
fixed number of steps, since a loaded machine or a throttled rank makes the
step time unknown in advance:

  - STOP_FILE: once it exists and holds a step number N, every rank stops
    before step N (the test writes a few steps past the current one, so all
    ranks, in lockstep through the all-reduces, stop at the same step); the
    job then ends as a job does (barrier, destroy_process_group);
  - STEPS: a bound on the steps anyway (default 100000).

Launch as torch_ddp_steps_job.py: RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT at
exec (torchrun-style), or without RANK a torch.multiprocessing.spawn parent
of WORLD ranks that each set them in their own os.environ. Each rank writes
its pid to $STEPS_LOG_DIR/pid.R first, then one line per optimizer step to
$STEPS_LOG_DIR/rank.R (wall-clock ns, what the agent's records use):

    JOBSTEP rank=R step=I start_ns=UNIX end_ns=UNIX
"""
import os
import sys

os.environ.setdefault("STEPS", "100000")
os.environ.setdefault("WIDTH", "384")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_ddp_steps_job as job  # noqa: E402 (after its settings)

if __name__ == "__main__":
    job.run()
