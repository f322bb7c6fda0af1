#!/usr/bin/env bash
# Discovery through the whole agent: the agent connects to the collector
# before any rank exists; processes with RANK (torchrun-style), srun's and
# mpirun's variables in their environment are tracked with the right job,
# rank and coordinates, their resources reach the collector (argusctl
# ranks), an exit is noticed; processes that look like ranks but are not
# usable are counted by reason in /metrics, said in /healthz and the log.
# test-cpu: all: counts every rank-like process on the machine
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
start_agent "$T/spool" --discovery.scan_interval 300ms --batch.max_age 200ms
wait_for "the agent connected with no rank" 10 bash -c \
    "curl -s 127.0.0.1:$APORT/healthz | grep -q 'collector connected'"
spawn() { env -i PATH=/usr/bin:/bin "$@" sleep 60 & PIDS+=($!); }
spawn RANK=0 LOCAL_RANK=0 WORLD_SIZE=4 ARGUS_JOB=disc ARGUS_TP_SIZE=2 ARGUS_PP_SIZE=2
spawn RANK=1 LOCAL_RANK=1 WORLD_SIZE=4 ARGUS_JOB=disc ARGUS_TP_SIZE=2 ARGUS_PP_SIZE=2
spawn RANK=3 LOCAL_RANK=3 WORLD_SIZE=4 ARGUS_JOB=disc ARGUS_TP_SIZE=2 ARGUS_PP_SIZE=2
victim=$!
spawn ARGUS_JOB=disc                      # no RANK, no collectives probe: skipped with its reason
spawn RANK=9 WORLD_SIZE=4 ARGUS_JOB=disc  # rank >= world size: not a rank
# srun: rank and job from SLURM's variables (job JOBID.STEPID)
spawn SLURM_JOB_ID=777 SLURM_STEP_ID=0 SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1
spawn SLURM_JOB_ID=777 SLURM_STEP_ID=0 SLURM_PROCID=5 SLURM_NTASKS=2  # past the tasks: skipped
# mpirun (Open MPI)
spawn OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3 OMPI_COMM_WORLD_LOCAL_RANK=0 \
    PMIX_NAMESPACE=mpijob
wait_for "5 ranks tracked" 10 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_ranks\"{print \$2}') == 5 ]]"
wait_for "ranks at the collector" 10 bash -c "$BIN/argusctl --collector 127.0.0.1:$CPORT ranks --job disc | grep -q '^ *3 '"
ctl ranks --job disc | tee "$T/ranks.txt"
# RANK LOCAL WORLD NODE GPU PID DP TP PP EP: rank 3 of tp=2, pp=2 is tp 1, dp 0, pp 1
awk '$1 == 3 && $3 == 4 && $4 == "testnode" && $8 == 1 && $7 == 0 && $9 == 1' "$T/ranks.txt" \
    | grep -q . || fail "rank 3 coordinates wrong"
[[ $(awk 'NR > 1' "$T/ranks.txt" | wc -l) == 3 ]] || fail "expected exactly 3 ranks"
wait_for "the srun rank at the collector" 10 bash -c \
    "$BIN/argusctl --collector 127.0.0.1:$CPORT ranks --job 777.0 | awk '\$1 == 1 && \$2 == 1 && \$3 == 2' | grep -q ."
wait_for "the mpirun rank at the collector" 10 bash -c \
    "$BIN/argusctl --collector 127.0.0.1:$CPORT ranks --job mpijob | awk '\$1 == 2 && \$3 == 3' | grep -q ."
curl -s "127.0.0.1:$APORT/metrics" >"$T/metrics"
skipped() { awk -v r="argus_agent_discovery_skipped_total{reason=\"$1\"}" '$1 == r {print $2}' "$T/metrics"; }
[[ $(skipped invalid_environ) == 2 ]] || fail "invalid_environ: $(skipped invalid_environ), want 2"
# >= 1: every python process on the machine that is in a job is watched too
(( $(skipped no_communicator_probe) >= 1 )) || fail "no_communicator_probe: $(skipped no_communicator_probe)"
curl -s "127.0.0.1:$APORT/healthz" | tee "$T/healthz"
grep -Eq "discovery: 5 ranks tracked.*invalid_environ 2 .*no_communicator_probe [0-9]+" "$T/healthz" \
    || fail "/healthz does not say what discovery skipped"
grep -q "SLURM_PROCID >= SLURM_NTASKS \[invalid_environ\]" "$T/agent.log" || fail "reason not logged"
grep -q "discovery: 5 ranks tracked" "$T/agent.log" || fail "the log does not say how many ranks"
kill "$victim"
wait_for "the exit to be noticed" 10 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_ranks\"{print \$2}') == 4 ]]"
grep -q "rank 3 of job disc (pid $victim) is gone" "$T/agent.log" || fail "exit not logged"
echo "discovery ok"
