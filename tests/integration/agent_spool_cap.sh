#!/usr/bin/env bash
# Spool cap: with the collector down and a tiny cap, the oldest batches go;
# the drop counter equals exactly what was lost, and it reaches the collector.
# test-cpu: idle: one agent replaying at 20 steps/s into its spool
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

start_agent "$T/spool" --replay.trace "$TRACE" --replay.ranks 8 --replay.rate 20 \
    --replay.steps 100 --replay.job cap --spool.cap 256KiB --spool.segment 64KiB \
    --batch.max_age 200ms
# the replay is over (every step closed but each rank's last, which stays
# open until the agent stops) and its last batch sealed (batch.max_age):
# everything is spooled or dropped
wait_for "the replay's 99 closed steps of 8 ranks" 60 bash -c \
    "(( \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_steps_total\"{print \$2}') >= 792 ))"
wait_stable "the last batch sealed" 30 1 metric "$APORT" argus_agent_batches_total
sealed=$(metric "$APORT" argus_agent_batches_total)
dropped=$(metric "$APORT" argus_agent_spool_dropped_total)
log "sealed $sealed batches, spool dropped $dropped, holds $(metric "$APORT" argus_agent_spool_bytes) bytes"
((dropped > 0)) || fail "nothing was dropped with a 256 KiB cap"
start_collector "$T/store"
wait_for "the spool to drain" 30 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_spool_records\"{print \$2}') == 0 ]]"
written=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_ingest_batches_total" {print $2}')
log "collector stored $written batches"
(( sealed - written == dropped )) || fail "lost $((sealed - written)) batches but counted $dropped"
reported=$(curl -s "127.0.0.1:$HPORT/metrics" | awk -F'[{} ]' '$1 == "argus_agent_reported_drops" && $2 ~ /reason="spool_cap"/ {print $NF}')
log "collector sees the agent's spool_cap counter at $reported"
[[ $reported == "$dropped" ]] || fail "collector saw drop counter '$reported', agent dropped $dropped"
read -r kmin kmax total lo < <(check_job cap 8) || fail "steps after the drop are not contiguous"
((lo > 0)) || fail "the oldest steps should be the ones dropped (first step $lo)"
echo "spool cap ok"
