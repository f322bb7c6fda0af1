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
# Once connected the agent may seal more batches (resources that only a
# dropped batch carried go out again, new drop totals), straight to the
# collector: so the books are checked when they balance at rest, the spool
# empty, and a wrong count never balances.
balanced() {
    local agent collector sealed_now dropped_now held written
    agent=$(curl -s "127.0.0.1:$APORT/metrics") collector=$(curl -s "127.0.0.1:$HPORT/metrics")
    sealed_now=$(awk '$1 == "argus_agent_batches_total" {print $2}' <<<"$agent")
    dropped_now=$(awk '$1 == "argus_agent_spool_dropped_total" {print $2}' <<<"$agent")
    held=$(awk '$1 == "argus_agent_spool_records" {print $2}' <<<"$agent")
    written=$(awk '$1 == "argus_ingest_batches_total" {print $2}' <<<"$collector")
    echo "sealed $sealed_now, dropped $dropped_now, in the spool $held, collector stored $written"
    [[ $held == 0 ]] && ((sealed_now - written == dropped_now))
}
deadline=$((SECONDS + 30))
until books=$(balanced); do
    ((SECONDS < deadline)) || fail "the spool's books never balanced in 30 s (lost = sealed - stored must equal the drop counter): $books"
    sleep 0.2
done
log "$books"
dropped=$(metric "$APORT" argus_agent_spool_dropped_total)
wait_for "the collector to see the agent's spool_cap counter at $dropped" 30 bash -c \
    "[[ \$(curl -s 127.0.0.1:$HPORT/metrics | awk -F'[{} ]' '\$1 == \"argus_agent_reported_drops\" && \$2 ~ /reason=\"spool_cap\"/ {print \$NF}') == $dropped ]]"
read -r kmin kmax total lo < <(check_job cap 8) || fail "steps after the drop are not contiguous"
((lo > 0)) || fail "the oldest steps should be the ones dropped (first step $lo)"
echo "spool cap ok"
