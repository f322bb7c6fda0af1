#!/usr/bin/env bash
# Hot standby (issue 28): one real agent with collector.set of three real
# collectors replays 8 ranks of one job. The job's primary and standby (by
# placement, computed here independently of the C code) both store every
# step record; the third gets nothing of it. The primary is killed -9
# mid-job: the standby keeps receiving, the agent's /metrics shows the dead
# one's unacked batches growing and then marks it behind
# (collector.standby_wait); the primary comes back on the same store and
# catches up from the spool. Both end with every step stored exactly once,
# from step 0, and nothing was dropped.
# test-cpu: idle: one agent replaying at 10 steps/s into three collectors, a 10 s outage
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"
JOB=standby-$$ # unique: an agent left over from an earlier run cannot add to it
STEPS=300

declare -a GP HP
for i in 0 1 2; do
    GP[i]=$(free_port)
    HP[i]=$(free_port)
    start_collector_on "${GP[i]}" "${HP[i]}" "$T/store$i"
    CPIDS[i]=$COLLECTOR_ON_PID
done
LIST="127.0.0.1:${GP[0]},127.0.0.1:${GP[1]},127.0.0.1:${GP[2]}"

# placement.h's rendezvous hashing, written again: the primary, the standby
# and the third member of JOB, as indexes into GP
read -r P S X < <(/usr/bin/python3 - "$JOB" "$LIST" <<'PY'
import sys
M = (1 << 64) - 1
def weight(job, member):
    h = 0xcbf29ce484222325
    for b in job.encode() + b"\0" + member.encode():
        h = ((h ^ b) * 0x100000001b3) & M
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & M
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & M
    return h ^ (h >> 31)
job, members = sys.argv[1], sys.argv[2].split(",")
order = sorted(range(len(members)), key=lambda i: (-weight(job, members[i]), members[i]))
print(*order)
PY
)
log "job $JOB: primary :${GP[P]}, standby :${GP[S]}, third :${GP[X]}"

# in a PID namespace of its own: ranks of tests running beside it would be
# jobs of its too, and their batches (carrying this job's steps as well) go to
# those jobs' collectors, the third among them
AGENT_ISOLATE=1 start_agent "$T/spool" --collector.set "$LIST" --collector.standby_wait 5s \
    --replay.trace "$TRACE" --replay.ranks 8 --replay.rate 10 --replay.steps $STEPS \
    --replay.job $JOB --batch.max_age 200ms
grep -q "collectors $LIST" "$T/agent.log" || fail "the start log line does not name the set"

# stored rank-steps of JOB at the collector on gRPC port PORT (0: none)
stored_at() { "$BIN/argusctl" --collector "127.0.0.1:$1" jobs | awk -v j="$JOB" '$1 == j {n=$5} END {print n+0}'; }
stored() { stored_at "${GP[$1]}"; } # I: an index into GP
export -f stored_at
export BIN JOB
# a labelled sample of the agent: member_metric NAME I
member_metric() { curl -s "127.0.0.1:$APORT/metrics" | awk -v m="$1{collector=\"127.0.0.1:${GP[$2]}\"}" '$1 == m {print $2}'; }

wait_for "the primary and the standby to store steps" 30 bash -c \
    "(( \$(stored_at ${GP[P]}) > 200 && \$(stored_at ${GP[S]}) > 200 ))"

log "kill -9 the primary"
kill -9 "${CPIDS[P]}"
wait "${CPIDS[P]}" 2>/dev/null
before=$(stored "$S")
sleep 3
u1=$(member_metric argus_agent_collector_unacked "$P")
sleep 4
u2=$(member_metric argus_agent_collector_unacked "$P")
after=$(stored "$S")
log "standby stored $before -> $after rank-steps; primary's unacked $u1 -> $u2"
((after > before + 100)) || fail "the standby stopped receiving while the primary was down"
((u2 > u1 && u1 > 0)) || fail "the dead primary's unacked count did not grow ($u1 -> $u2)"
[[ $(member_metric argus_agent_collector_member_connected "$P") == 0 ]] || fail "primary shown connected"
[[ $(member_metric argus_agent_collector_unacked "$S") -le 2 ]] || fail "the standby lags"
wait_for "the primary to be marked behind" 10 bash -c \
    "curl -s 127.0.0.1:$APORT/metrics | grep -q '^argus_agent_collector_behind{collector=\"127.0.0.1:${GP[P]}\"} 1'"
[[ $(metric "$APORT" argus_agent_collector_connected) == 0 ]] || fail "the aggregate says all connected"

log "the primary comes back on its store"
start_collector_on "${GP[P]}" "${HP[P]}" "$T/store$P"
total=$((8 * (STEPS - 1)))
for c in $P $S; do
    wait_for "collector :${GP[c]} to hold the job's $total closed rank-steps" 90 bash -c \
        "(( \$(stored_at ${GP[c]}) >= $total ))"
done
wait_for "the primary to catch up" 20 bash -c \
    "curl -s 127.0.0.1:$APORT/metrics | grep -q '^argus_agent_collector_unacked{collector=\"127.0.0.1:${GP[P]}\"} 0'"
[[ $(member_metric argus_agent_collector_behind "$P") == 0 ]] || fail "the primary still behind"

for c in $P $S; do
    read -r kmin kmax sum lo < <(CPORT=${GP[c]} check_job $JOB 8) || fail "collector :${GP[c]}: lost or duplicated steps"
    log "collector :${GP[c]}: per rank $kmin..$kmax steps, $sum rank-steps, first step $lo"
    [[ $lo == 0 ]] || fail "collector :${GP[c]}: first step $lo"
    ((kmin >= STEPS - 1)) || fail "collector :${GP[c]}: only $kmin steps per rank"
done
third=$(stored "$X")
if ((third != 0)); then
    "$BIN/argusctl" --collector "127.0.0.1:${GP[X]}" steps --job $JOB --limit 100000 \
        | awk 'NR > 1 {print $2}' | sort -n | uniq -c | head -40
    "$BIN/argusctl" --collector "127.0.0.1:${GP[X]}" ranks --job $JOB | head -12
    grep -v " info " "$T/agent.log" | tail -20
    fail "the third collector stored $third rank-steps of the job"
fi
dropped=$(metric "$APORT" argus_agent_spool_dropped_total)
((dropped == 0)) || fail "the spool dropped $dropped batches"
[[ $(metric "$APORT" argus_agent_rejected_total) == 0 ]] || fail "batches refused"
echo "standby ok"
