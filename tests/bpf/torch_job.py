"""A real PyTorch job for tests/integration/bpf_torch_steps.sh: CPU, gloo,
4 ranks (torch.multiprocessing, or one process per rank when RANK is set as a
launcher sets it), a small MLP, no annotation. Each rank writes
its pid to $ARGUS_PIDS_DIR/rank.R, waits for $ARGUS_GO, then trains STEPS
steps; every step is forward, backward, one all_reduce per gradient (a burst
of collectives) or, with DDP=1, DistributedDataParallel's bucketed
allreduce during backward, an optimizer step, and prints its own timing:

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
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    with open(os.path.join(os.environ["ARGUS_PIDS_DIR"], "rank.%d" % rank), "w") as f:
        f.write(str(os.getpid()))
    go = os.environ.get("ARGUS_GO")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    ddp = os.environ.get("DDP") == "1"
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.25)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 256)
    y = torch.randint(0, 10, (256,))
    lines = []
    for i in range(STEPS):
        t0 = time.monotonic_ns()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if not ddp:
            for p in model.parameters():
                dist.all_reduce(p.grad)
        opt.step()
        lines.append("JOBSTEP rank=%d step=%d start_ns=%d dur_ns=%d"
                     % (rank, i, t0, time.monotonic_ns() - t0))
    dist.barrier()
    print("\n".join(lines), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29517
    if "RANK" in os.environ:  # one rank per process, as a launcher starts them
        rank_main(int(os.environ["RANK"]), port)
    else:
        mp.spawn(rank_main, args=(port,), nprocs=WORLD, join=True)
