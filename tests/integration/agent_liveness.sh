#!/usr/bin/env bash
# The agent's liveness channel (agent/liveness/) on a real PyTorch gloo DDP
# job (4 ranks, CPU, one process per rank with RANK at exec, as torchrun
# starts them; tests/bpf/torch_fault_job.py) under the real agent (default
# probes and settings: status.after = status.interval = 5s) and collector:
#   - rank 2 stopped at the start of a step (SIGSTOP to itself, FAULT_FILE:
#     before it enters the step's collectives; a SIGSTOP from outside may
#     land after it entered them, a hang where nobody waits for a rank that
#     never came): within status.after + 2
#     intervals the agent has sent statuses with state stopped
#     (argus_agent_rank_statuses_total{state="stopped"}), its log names the
#     stopped rank, and every waiting rank stands at a collective of the
#     same communicator that the stopped rank never entered;
#   - SIGCONT: it progresses again (a moving status, logged);
#   - rank 1 killed (kill -9): an exit status with signal 9 within seconds
#     (argus_agent_rank_exits_total{how="signal"}), logged first, before the
#     exits of the others (which fail in gloo and exit with an error).
# LAUNCH=spawn: the job is one torch.multiprocessing.spawn parent whose
# children set their rank in os.environ (the agent learns it from the
# communicator); when rank 1 dies the parent kills the rest. make test runs
# the spawn launch end to end instead (torch_fault_spawn.sh: the statuses
# number the collectives as the records do, or the hang is not named).
# test-cpu: all: a real 4-rank PyTorch job on all cores, stopped and killed under a real agent
source "$(dirname "$0")/lib.sh"

[[ $(id -u) == 0 ]] || skip "needs root for BPF"
[[ -r /sys/kernel/btf/vmlinux ]] || skip "no BTF"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "no python3-torch"

JOB=livejob
# labelled sample: mval NAME LABELS (0 when absent)
mval() {
    curl -s "127.0.0.1:$APORT/metrics" |
        awk -v m="$1{$2}" '$1 == m {v = $2} END {print v + 0}'
}
rank_pid() { cat "$T/log/pid.$1"; }
log_since() { tail -n +"$(($1 + 1))" "$T/agent.log"; }

start_collector "$T/store"
probes=$("$BIN/argus-agent" --print-config |
    awk '/^\[/ {sec=$0} sec == "[probes]" && $1 == "enable" {gsub(/"/, "", $3); print $3}')
start_agent "$T/spool" --probes.enable "$probes"
mkdir -p "$T/log"
port=$(free_port)
if [[ ${LAUNCH:-exec} == spawn ]]; then
    env ARGUS_JOB=$JOB MASTER_PORT=$port WORLD=4 OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" \
        FAULT_FILE="$T/faults" /usr/bin/python3 "$REPO/tests/bpf/torch_fault_job.py" \
        >"$T/job.out" 2>&1 &
    PIDS+=($!)
fi
for r in 0 1 2 3; do
    [[ ${LAUNCH:-exec} == spawn ]] && break
    env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 ARGUS_JOB=$JOB MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$port OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" FAULT_FILE="$T/faults" \
        /usr/bin/python3 "$REPO/tests/bpf/torch_fault_job.py" >"$T/job.$r.out" 2>&1 &
    PIDS+=($!)
done
wait_for "20 steps of the job" 180 bash -c "(( \$(cat $T/log/rank.3 2>/dev/null | wc -l) >= 20 ))"
# (the agent sees every rank on the machine: other tests' jobs too)
wait_for "the agent tracking the 4 ranks" 30 bash -c \
    "(( \$(grep -c 'rank [0-3] of job $JOB (pid [0-9]*, world 4' $T/agent.log) >= 4 ))"

# --- a rank stopped ---------------------------------------------------------
mark=$(wc -l <"$T/agent.log")
echo "2 stop" >"$T/faults"
t0=$SECONDS
wait_for "rank 2 stopped" 30 bash -c "grep -q '^State:.*T' /proc/$(rank_pid 2)/status"
log "rank 2 (pid $(rank_pid 2)) stopped itself at job step $(wc -l <"$T/log/rank.2")"
wait_every "a status with state stopped" 20 0.2 bash -c \
    "(( \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1 == \"argus_agent_rank_statuses_total{state=\\\"stopped\\\"}\" {print \$2}') >= 1 ))"
log "first stopped status after $((SECONDS - t0)) s"
# the waiting ranks stall at the same time: give their statuses a tick or two
wait_for "statuses of all four ranks" 10 bash -c \
    "(( \$(tail -n +$((mark + 1)) $T/agent.log | grep -c 'of job $JOB (pid [0-9]*): no progress for') >= 4 ))"
log_since "$mark" | grep "of job $JOB (pid [0-9]*): no progress for" | tee "$T/stalls.txt"
/usr/bin/python3 - "$T/stalls.txt" <<'PY' || fail "the statuses do not show the ranks waiting for rank 2"
import re, sys
pat = re.compile(r"rank (\d+) of job \S+ \(pid \d+\): no progress for \d+ s: (\w+) \((.)\)"
                 r".*last entered (\S+) #(\d+) of comm (0x[0-9a-f]+)")
first = {}
for line in open(sys.argv[1]):
    m = pat.search(line)
    if m and int(m.group(1)) not in first:
        first[int(m.group(1))] = m.groups()
assert sorted(first) == [0, 1, 2, 3], "ranks with a stall line: %s" % sorted(first)
stopped = first[2]
assert stopped[1] == "stopped" and stopped[2] in "Tt", "rank 2: %s" % (stopped,)
for r in (0, 1, 3):
    w = first[r]
    assert w[1] != "stopped", "rank %d is %s" % (r, w[1])
    assert w[5] == stopped[5], "rank %d comm %s, rank 2 comm %s" % (r, w[5], stopped[5])
    assert int(w[4]) > int(stopped[4]), \
        "rank %d entered #%s, not past rank 2's #%s" % (r, w[4], stopped[4])
print("waiting ranks entered", {r: int(first[r][4]) for r in (0, 1, 3)},
      "; rank 2 never got past", int(stopped[4]))
PY

# --- it moves again -----------------------------------------------------------
mark=$(wc -l <"$T/agent.log")
kill -CONT "$(rank_pid 2)"
wait_for "rank 2 progressing again" 20 bash -c \
    "tail -n +$((mark + 1)) $T/agent.log | grep -q 'rank 2 of job $JOB (pid [0-9]*) progresses again'"
steps=$(wc -l <"$T/log/rank.2")
wait_for "rank 2 stepping again" 60 bash -c "(( \$(wc -l <$T/log/rank.2) > $steps + 3 ))"

# --- a rank killed ------------------------------------------------------------
mark=$(wc -l <"$T/agent.log")
before=$(mval argus_agent_rank_exits_total 'how="signal"')
kill -9 "$(rank_pid 1)"
t0=$SECONDS
wait_every "an exit status with signal 9" 30 0.2 bash -c \
    "(( \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1 == \"argus_agent_rank_exits_total{how=\\\"signal\\\"}\" {print \$2}') > $before ))"
log "exit status after $((SECONDS - t0)) s"
# every rank of the job gone (discovery's line follows each exit)
wait_for "the other ranks ending (gloo errors)" 60 bash -c \
    "(( \$(tail -n +$((mark + 1)) $T/agent.log | grep -c 'rank [0-3] of job $JOB (pid [0-9]*) is gone') >= 4 ))"
sleep 1 # the last one's exit line
log_since "$mark" | grep -E "of job $JOB .*(ended:|is gone)" | tee "$T/exits.txt"
grep -m1 "ended:" "$T/exits.txt" | grep -q "rank 1 of job $JOB .* ended: killed by signal 9" ||
    fail "the first rank to end is not rank 1 killed by signal 9"
# the others fail in gloo (exit code 1), or mp.spawn's parent kills them
[[ $(grep -c "ended:" "$T/exits.txt") == 4 ]] || fail "not every rank's end logged as abnormal"
curl -s "127.0.0.1:$APORT/metrics" | grep -E "^argus_agent_rank_(statuses|exits)_total" | grep -v " 0$"
kill -0 "$COLLECTOR_PID" || fail "the collector died"
[[ $(metric "$APORT" argus_agent_rejected_total) == 0 ]] || fail "the collector refused batches"
echo "agent liveness ok: stopped rank named, waiting ranks past it, moving again, kill -9 first"
