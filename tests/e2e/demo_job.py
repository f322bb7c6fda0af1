"""The training job of `make demo` (tests/e2e/demo_torch.sh) and of the
overhead benchmark (tests/bench/bench_torch_ab.sh): a real PyTorch DDP job as
people write it. CPU, gloo, default DDP buckets (the first 1 MiB bucket and
the rest: two all-reduces per step), no annotation, nothing argus-specific.

Launch modes, as people launch it:
  - no RANK in the environment: torch.multiprocessing.spawn starts WORLD
    children and each sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in
    its own os.environ before init_process_group("gloo") (env://);
  - RANK and WORLD_SIZE at exec (torchrun, or one process per rank).

Environment: WORLD (4), STEPS (2000: every rank stops at the same step; the
demo stops the job before), WIDTH (512, hidden size: 4 layers, 3 MiB of parameters), BATCH (16),
ARGUS_PIDS_DIR (each rank writes its pid to rank.R there, when set).
Each rank prints its own timing of every step as it goes (monotonic clock),
and at the end its CPU time (all threads, user + system: what uprobes cost
it is in there) and its main thread's wait for a core (run queue,
schedstat) over the steps from WARM (10) on:

    JOBSTEP rank=R step=I start_ns=MONO dur_ns=NS cpu_ns=NS
    JOBCPU rank=R steps=K cpu_ns=NS wait_ns=NS

(cpu_ns on a step line: the rank's CPU time, all threads, since its
previous step line.)
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STEPS = int(os.environ.get("STEPS", "2000"))
WORLD = int(os.environ.get("WORLD", "4"))
WIDTH = int(os.environ.get("WIDTH", "512"))
BATCH = int(os.environ.get("BATCH", "16"))
WARM = int(os.environ.get("WARM", "10"))


def run_queue_ns():
    """Time the main thread (the one that runs the steps) waited for a core."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1])


def rank_main(rank, port):
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(WORLD)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    pids = os.environ.get("ARGUS_PIDS_DIR")
    if pids:
        with open(os.path.join(pids, "rank.%d" % rank), "w") as f:
            f.write(str(os.getpid()))
    dist.init_process_group("gloo")
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(BATCH, WIDTH)
    y = torch.randint(0, 10, (BATCH,))
    cpu0 = wait0 = 0
    cpu_last = time.process_time_ns()
    for i in range(STEPS):
        if i == WARM:
            cpu0, wait0 = time.process_time_ns(), run_queue_ns()
        t0 = time.monotonic_ns()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        t1, cpu = time.monotonic_ns(), time.process_time_ns()
        line = "JOBSTEP rank=%d step=%d start_ns=%d dur_ns=%d cpu_ns=%d\n" % (
            rank, i, t0, t1 - t0, cpu - cpu_last)
        cpu_last = cpu
        os.write(1, line.encode())  # one write: the ranks share stdout
    if STEPS > WARM:
        line = "JOBCPU rank=%d steps=%d cpu_ns=%d wait_ns=%d\n" % (
            rank, STEPS - WARM, time.process_time_ns() - cpu0, run_queue_ns() - wait0)
        os.write(1, line.encode())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29517
    if "RANK" in os.environ:
        rank_main(int(os.environ["RANK"]), port)
    else:
        mp.spawn(rank_main, args=(port,), nprocs=WORLD, join=True)
