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
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STEPS = int(os.environ.get("STEPS", "100000"))
WIDTH = int(os.environ.get("WIDTH", "384"))
STOP_FILE = os.environ.get("STOP_FILE", "")


def spawned(rank, world, port):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    main()


def stop_step():
    """The step to stop before, once the stop file says it."""
    try:
        with open(STOP_FILE) as f:
            return int(f.read().strip() or STEPS)
    except (OSError, ValueError):
        return None


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logdir = os.environ["STEPS_LOG_DIR"]
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    with open(os.path.join(logdir, "pid.%d" % rank), "w") as f:
        f.write(str(os.getpid()))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(*layers, torch.nn.Linear(WIDTH, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(32, WIDTH)
    y = torch.randint(0, 10, (32,))
    log = open(os.path.join(logdir, "rank.%d" % rank), "w", buffering=1)
    last = STEPS
    i = 0
    while i < last:
        t0 = time.time_ns()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        log.write("JOBSTEP rank=%d step=%d start_ns=%d end_ns=%d\n"
                  % (rank, i, t0, time.time_ns()))
        i += 1
        if STOP_FILE and last == STEPS and os.path.exists(STOP_FILE):
            n = stop_step()
            if n is not None:
                last = min(STEPS, max(n, i))
    log.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if "RANK" in os.environ:
        main()
    else:
        world = int(os.environ.get("WORLD", "4"))
        mp.spawn(spawned, args=(world, int(os.environ["MASTER_PORT"])), nprocs=world, join=True)
