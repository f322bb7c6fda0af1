"""A real PyTorch DDP job for the step-numbering tests
(tests/integration/agent_torch_steps*.sh): CPU, gloo, one process per rank
started as a launcher starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT in the
exec environment), or, without RANK, torch.multiprocessing.spawn of WORLD
ranks that each set them in their own os.environ; default
DistributedDataParallel settings (so two bucket
all-reduces per step for this model: the first bucket is capped at 1 MiB),
no annotation. With ACCUM=2 each optimizer step is two micro-steps, the first
under no_sync() (DDP's gradient accumulation: one set of all-reduces per
step).

Each rank writes its own per-step log as it goes, one line per optimizer
step, with wall-clock times (time.time_ns(), what the agent's records use)
and the monotonic time at the end (to tell a realtime clock that was set
during the run):

    JOBSTEP rank=R step=I start_ns=UNIX end_ns=UNIX mono_ns=MONO

to $STEPS_LOG_DIR/rank.R, and its pid to $STEPS_LOG_DIR/pid.R first.

Spawned on several nodes (tests/integration/torch_two_nodes.sh): with
NPROC_PER_NODE set, the parent spawns that many ranks, RANK = NODE_RANK *
NPROC_PER_NODE + local index, of WORLD, with MASTER_ADDR = SPAWN_ADDR and
MASTER_PORT = SPAWN_PORT set in the children's os.environ only (the parent's
exec environment has no rendezvous variable at all, as with a per-node
spawner); without it, every rank on this node at 127.0.0.1:MASTER_PORT.

BATCH (32) is the rows of every rank's batch. IMBALANCE makes one rank do
more work (a bigger batch) than the others, as
a data loader with uneven shards does; unset (the default), every rank runs
the same batch:

    fixed:R:F    rank R runs F times the batch on every step
    rotate:N:F   F times the batch moves to the next rank every N steps
                 (rank (step // N) % world): data skew, no bad rank

STOP_FILE (tests/bpf/torch_detect_job.py): once it exists and holds a step
number N, every rank stops before step N (ranks in lockstep through the
all-reduces stop at the same step); STEPS stays a bound.

FAULT_FILE (tests/bpf/torch_fault_job.py): lines `RANK ACTION [STEP]`, written
at any time; RANK is a global rank or `*` (every rank). At the start of its
next step (at STEP or later when given) the rank does ACTION, once per line:
  stop   SIGSTOP itself (SIGCONT from outside resumes it)
  read   block in a read: of the FIFO FAULT_FIFO until the test writes a byte
         to it, else of a pipe nobody writes, forever
  spin   a Python busy loop, forever
  exit   sys.exit(3)
  abort  os.abort() (SIGABRT)
  kill   SIGKILL itself
  ckpt   sleep CKPT_SECONDS (default 30) outside collectives, then carry on (a
         checkpoint; give every rank the same STEP so that none waits in a
         collective for another)
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STEPS = int(os.environ.get("STEPS", "300"))
ACCUM = int(os.environ.get("ACCUM", "1"))
WIDTH = int(os.environ.get("WIDTH", "512"))
STOP_FILE = os.environ.get("STOP_FILE", "")
FAULT_FILE = os.environ.get("FAULT_FILE", "")
FAULTS_DONE = set()
IMBALANCE = os.environ.get("IMBALANCE", "")
BATCH = int(os.environ.get("BATCH", "32"))


def imbalance():
    """(mode, arg, factor) of IMBALANCE, or None; a bad value is an error."""
    if not IMBALANCE:
        return None
    parts = IMBALANCE.split(":")
    if len(parts) != 3 or parts[0] not in ("fixed", "rotate"):
        raise SystemExit("IMBALANCE=%r: want fixed:RANK:FACTOR or rotate:STEPS:FACTOR"
                         % IMBALANCE)
    arg, factor = int(parts[1]), float(parts[2])
    if factor < 1 or (parts[0] == "rotate" and arg < 1):
        raise SystemExit("IMBALANCE=%r: FACTOR >= 1, STEPS >= 1" % IMBALANCE)
    return parts[0], arg, factor


def big_rank(imb, step, world):
    """The rank that runs the bigger batch at step, or -1."""
    if imb is None:
        return -1
    mode, arg, _ = imb
    return arg if mode == "fixed" else (step // arg) % world


def spawned(local, world, port):
    nproc = int(os.environ.get("NPROC_PER_NODE", world))
    rank = int(os.environ.get("NODE_RANK", "0")) * nproc + local
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR=os.environ.get("SPAWN_ADDR", "127.0.0.1"), MASTER_PORT=str(port))
    main()


def stop_step():
    """The step to stop before, once the stop file says it."""
    try:
        with open(STOP_FILE) as f:
            return int(f.read().strip() or STEPS)
    except (OSError, ValueError):
        return None


def fault_action(action):
    """Do one FAULT_FILE action (see the module's comment)."""
    if action == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    elif action == "read":
        fifo = os.environ.get("FAULT_FIFO")
        if fifo:  # blocked in read until the test writes a byte to the FIFO
            fd = os.open(fifo, os.O_RDWR)
            os.read(fd, 1)
            os.close(fd)
        else:
            r, w = os.pipe()  # w stays open: no end of file
            os.read(r, 1)
    elif action == "spin":
        while True:
            pass
    elif action == "exit":
        sys.exit(3)
    elif action == "abort":
        os.abort()
    elif action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "ckpt":
        time.sleep(float(os.environ.get("CKPT_SECONDS", "30")))


def fault_check(rank, step):
    """At a step's start: the FAULT_FILE lines for this rank and step."""
    try:
        with open(FAULT_FILE) as f:
            lines = f.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or line in FAULTS_DONE or fields[0] not in ("*", str(rank)):
            continue
        if len(fields) > 2 and step < int(fields[2]):
            continue
        FAULTS_DONE.add(line)
        fault_action(fields[1])


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logdir = os.environ["STEPS_LOG_DIR"]
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    with open(os.path.join(logdir, "pid.%d" % rank), "w") as f:
        f.write(str(os.getpid()))
    # GATE_FILE: make the group only once it exists (60 s at most): a test
    # of what the agent reads when a group is made waits for its probes
    gate, t_end = os.environ.get("GATE_FILE", ""), time.time() + 60
    while gate and not os.path.exists(gate) and time.time() < t_end:
        time.sleep(0.05)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(*layers, torch.nn.Linear(WIDTH, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    imb = imbalance()
    x = torch.randn(BATCH, WIDTH)
    y = torch.randint(0, 10, (BATCH,))
    big = int(BATCH * imb[2]) if imb else BATCH
    xb, yb = torch.randn(big, WIDTH), torch.randint(0, 10, (big,))
    log = open(os.path.join(logdir, "rank.%d" % rank), "w", buffering=1)
    last = STEPS
    i = 0
    while i < last:
        if FAULT_FILE:
            fault_check(rank, i)
        t0 = time.time_ns()
        opt.zero_grad()
        bx, by = (xb, yb) if big_rank(imb, i, world) == rank else (x, y)
        for micro in range(ACCUM):
            if micro < ACCUM - 1:
                with model.no_sync():
                    torch.nn.functional.cross_entropy(model(bx), by).backward()
            else:
                torch.nn.functional.cross_entropy(model(bx), by).backward()
        opt.step()
        log.write("JOBSTEP rank=%d step=%d start_ns=%d end_ns=%d mono_ns=%d\n"
                  % (rank, i, t0, time.time_ns(), time.monotonic_ns()))
        i += 1
        if STOP_FILE and last == STEPS and os.path.exists(STOP_FILE):
            n = stop_step()
            if n is not None:
                last = min(STEPS, max(n, i))
    log.close()
    dist.barrier()
    dist.destroy_process_group()


def run():
    """One rank (RANK at exec), or an mp.spawn parent of WORLD ranks."""
    if "RANK" in os.environ:
        main()
    else:
        world = int(os.environ.get("WORLD", "4"))
        nproc = int(os.environ.get("NPROC_PER_NODE", world))
        port = int(os.environ.get("SPAWN_PORT") or os.environ["MASTER_PORT"])
        mp.spawn(spawned, args=(world, port), nprocs=nproc, join=True)


if __name__ == "__main__":
    run()
