#!/usr/bin/env bash
# Reconnect: a real agent (collector.backoff_max 1s) streams, the collector
# is killed, the agent spools; once a collector answers again the spool
# drains within backoff_max + 3 s. gRPC moves a connection attempt on only
# while someone polls: an agent that waited out its backoff without polling
# its channel took 4-11 s, every stream it opened meanwhile failing at once.
# test-cpu: idle: one agent replaying at 10 steps/s, fixed outages
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

records() { metric "$APORT" argus_agent_spool_records; }
start_collector "$T/store"
start_agent "$T/spool" --replay.trace "$TRACE" --replay.ranks 2 --replay.rate 10 \
    --replay.steps 100000 --replay.job reconnect
wait_for "the agent to connect" 20 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_collector_connected\"{print \$2}') == 1 ]]"
for round in 1 2 3; do
    kill -9 "$COLLECTOR_PID"
    wait "$COLLECTOR_PID" 2>/dev/null
    sleep 6 # past the backoff's cap: the agent retries every second
    spooled=$(records)
    ((spooled > 0)) || fail "round $round: nothing spooled during the outage"
    start_collector "$T/store"
    up=$EPOCHREALTIME
    end=$((SECONDS + 30))
    until (($(records) == 0)); do
        ((SECONDS < end)) || fail "round $round: the spool ($spooled records) never drained"
        sleep 0.05
    done
    took=$(awk -v a="$up" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
    log "round $round: $spooled records drained ${took}s after the collector answered"
    awk -v t="$took" 'BEGIN {exit !(t <= 4.0)}' ||
        fail "round $round: drained ${took}s after the collector answered (backoff_max 1s + 3s allowed)"
done
echo "agent reconnect ok"
