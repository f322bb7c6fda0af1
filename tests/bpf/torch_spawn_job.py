"""A real PyTorch DDP job as people launch it, for the discovery tests
(tests/integration/agent_torch_spawn.sh): CPU, gloo, default DDP buckets,
no annotation. Two launch modes:

  - no RANK in the environment: torch.multiprocessing.spawn starts WORLD
    children, and each child sets RANK, WORLD_SIZE, MASTER_ADDR and
    MASTER_PORT in its own os.environ before init_process_group("gloo")
    (env://): /proc/PID/environ of the child never shows them;
  - RANK and WORLD_SIZE at exec (what torchrun does): one rank per process.

Each rank writes its pid to $ARGUS_PIDS_DIR/rank.R, waits for $ARGUS_GO
(when set), trains STEPS steps and prints its own timing per step:

    JOBSTEP rank=R step=I start_ns=MONO dur_ns=NS
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STEPS = int(os.environ.get("STEPS", "30"))
WORLD = int(os.environ.get("WORLD", "4"))


def rank_main(rank, port):
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(WORLD)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    with open(os.path.join(os.environ["ARGUS_PIDS_DIR"], "rank.%d" % rank), "w") as f:
        f.write(str(os.getpid()))
    go = os.environ.get("ARGUS_GO")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    dist.init_process_group("gloo")
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 256)
    y = torch.randint(0, 10, (128,))
    lines = []
    for i in range(STEPS):
        t0 = time.monotonic_ns()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        lines.append("JOBSTEP rank=%d step=%d start_ns=%d dur_ns=%d"
                     % (rank, i, t0, time.monotonic_ns() - t0))
    dist.barrier()
    print("\n".join(lines), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29517
    if "RANK" in os.environ:
        rank_main(int(os.environ["RANK"]), port)
    else:
        mp.spawn(rank_main, args=(port,), nprocs=WORLD, join=True)
