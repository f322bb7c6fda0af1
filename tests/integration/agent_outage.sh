#!/usr/bin/env bash
# Outage: the agent streams (8 replayed ranks at 10 steps/s) while the
# collector is down for 30 s, then up: every batch arrives exactly once, in
# order per rank, and the spool drains back to ~0.
# test-cpu: idle: one agent replaying at 10 steps/s, a 30 s outage
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

start_agent "$T/spool" --replay.trace "$TRACE" --replay.ranks 8 --replay.rate 10 \
    --replay.steps 400 --replay.job outage
sleep ${OUTAGE:-30}
spooled=$(metric "$APORT" argus_agent_spool_records)
log "after the outage: $spooled batches spooled, $(metric "$APORT" argus_agent_spool_bytes) bytes"
outage=${OUTAGE:-30}
((spooled >= outage * 6 / 10)) || fail "expected the spool to hold the outage, it holds $spooled"
start_collector "$T/store"
# the replay ends after 400 steps; the last one stays open until the agent stops
wait_for "all closed steps to arrive" 90 bash -c \
    "$BIN/argusctl --collector 127.0.0.1:$CPORT jobs | awk '\$1 == \"outage\" && \$5 >= 3192 {ok=1} END {exit !ok}'"
wait_for "the spool to drain" 10 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_spool_records\"{print \$2}') == 0 ]]"
log "spool drained: $(metric "$APORT" argus_agent_spool_bytes) bytes in segments"
read -r kmin kmax total lo < <(check_job outage 8) || fail "job check failed"
log "stored per rank: $kmin..$kmax steps, $total rank-steps, first step $lo"
[[ $lo == 0 ]] || fail "the oldest steps of the outage are missing (first step $lo)"
((kmin >= 399)) || fail "expected >= 399 steps per rank after the outage, got $kmin"
bytes=$(metric "$APORT" argus_agent_spool_bytes)
((bytes < 1048576)) || fail "spool holds $bytes bytes after draining"
echo "outage ok"
