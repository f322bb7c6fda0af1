#!/usr/bin/env bash
# agent_liveness.sh with the job launched by torch.multiprocessing.spawn: the
# ranks set RANK in their own os.environ, so the agent learns them from the
# communicator they create, after their first calls; the statuses must number
# the collectives the same way all the same.
# test-cpu: all: a real 4-rank PyTorch job on all cores, stopped and killed under a real agent
LAUNCH=spawn exec "$(dirname "$0")/agent_liveness.sh"
