"""A real PyTorch DDP job with faults on demand, for the liveness tests
(tests/integration/agent_liveness.sh) and end-to-end hang and death tests:
the job of tests/bpf/torch_ddp_steps_job.py (CPU, gloo, default DDP buckets,
no annotation, its own per-step log and pid files in $STEPS_LOG_DIR) run
until it is told otherwise (STEPS default 100000), with FAULT_FILE: lines
`RANK ACTION [STEP]` the test writes at any time (RANK: a global rank or `*`),
done by that rank at the start of its next step (or of STEP):

  stop   SIGSTOP itself          read   block in a read of an empty pipe
  spin   a Python busy loop      exit   sys.exit(3)
  abort  os.abort()              kill   SIGKILL itself
  ckpt   sleep CKPT_SECONDS (30) outside collectives, then carry on

The test can also signal a rank from outside by its pid file. When a rank
dies the others fail in gloo within seconds and exit non-zero (under
torch.multiprocessing.spawn the parent then kills the rest).

Launch as torch_ddp_steps_job.py: RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT at
exec (torchrun-style), or without RANK a torch.multiprocessing.spawn parent
of WORLD ranks. STOP_FILE ends it cleanly as there.
"""
import os
import sys

os.environ.setdefault("STEPS", "100000")
os.environ.setdefault("WIDTH", "384")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_ddp_steps_job as job  # noqa: E402 (after its settings)

if __name__ == "__main__":
    job.run()
