#!/usr/bin/env bash
# Agent kill -9 mid-stream, then restart on the same spool: the unacked
# batches are replayed, none is lost (every rank's steps stay contiguous from
# step 0) and none is stored twice (rank_steps == distinct records).
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

start_collector "$T/store"
start_agent "$T/spool" --replay.trace "$TRACE" --replay.ranks 8 --replay.rate 20 \
    --replay.job k9 --batch.max_age 200ms
sleep 3
# take the collector away so batches pile up unacked, then kill the agent
kill -9 "$COLLECTOR_PID"; wait "$COLLECTOR_PID" 2>/dev/null
sleep 2
sealed=$(metric "$APORT" argus_agent_batches_total)
spooled=$(metric "$APORT" argus_agent_spool_records)
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
log "agent killed with $spooled unacked of $sealed sealed batches"
((spooled > 3)) || fail "expected unacked batches in the spool, got $spooled"

start_collector "$T/store"
# restart without a source: only the spool can deliver now
start_agent "$T/spool"
wait_for "the spool to be replayed" 30 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_spool_records\"{print \$2}') == 0 ]]"
sent=$(metric "$APORT" argus_agent_sent_total)
log "restarted agent re-sent $sent batches"
((sent >= spooled)) || fail "restarted agent sent $sent batches, $spooled were unacked"
read -r kmin kmax total lo < <(check_job k9 8) || fail "lost or duplicated steps"
log "stored per rank: $kmin..$kmax steps, $total rank-steps, first step $lo"
[[ $lo == 0 ]] || fail "first step $lo"
((kmin >= 50)) || fail "only $kmin steps per rank survived"
echo "kill -9 ok"
