#!/usr/bin/env bash
# Drop counters survive an agent restart: what a previous run of this spool
# epoch counted (saved in spool.dir/drops) is where a restarted agent goes on
# from, also after kill -9, and reaches the collector; the spool's own
# counters come from its meta and are never counted twice.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
start_agent "$T/spool"
wait_for "agent metrics" 10 bash -c "curl -sf 127.0.0.1:$APORT/metrics"
epoch=$(sed -n 's/.*spool .*: epoch \([0-9]*\),.*/\1/p' "$T/agent.log" | head -1)
[[ -n $epoch ]] || fail "no spool epoch in the agent log"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
# what an earlier run left: two counters, and a spool counter that must be ignored
printf 'argus-drops 1 %s\n7\t-1\tcupti_ring_full\t-\n3\t5\tstacks_queue_full\tjob-a\n9\t-1\tspool_cap\t-\n' \
    "$epoch" >"$T/spool/drops"

reported() { # reason: the collector's value for this agent
    curl -s "127.0.0.1:$HPORT/metrics" |
        awk -v r="reason=\"$1\"" '$1 ~ /^argus_agent_reported_drops/ && index($1, r) && index($1, "agent=\"testnode\"") {print $2}'
}
start_agent "$T/spool"
wait_for "carried-over counters at the collector" 15 bash -c "[[ \$(curl -s 127.0.0.1:$HPORT/metrics | grep 'reason=\"cupti_ring_full\"' | awk '{print \$2}') == 7 ]]"
[[ $(reported stacks_queue_full) == 3 ]] || fail "stacks_queue_full reported $(reported stacks_queue_full), want 3"
spool_cap=$(reported spool_cap)
[[ -z $spool_cap || $spool_cap == 0 ]] || fail "spool_cap came from the drops file: $spool_cap"
grep -q "2 drop counters carried over" "$T/agent.log" || fail "no carry-over in the agent log"

# kill -9: the file is what the agent saved, and the next run goes on from it
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
grep -q $'^7\t-1\tcupti_ring_full\t-$' "$T/spool/drops" || fail "drops file lost its counters: $(cat "$T/spool/drops")"
grep -q spool_cap "$T/spool/drops" && fail "the agent saved spool_cap"
start_agent "$T/spool"
wait_for "the agent after kill -9" 10 bash -c "curl -sf 127.0.0.1:$APORT/metrics >/dev/null"
sleep 2
[[ $(reported cupti_ring_full) == 7 ]] || fail "after kill -9 the collector has $(reported cupti_ring_full), want 7"
[[ $(grep -c "drop counters carried over" "$T/agent.log") == 2 ]] || fail "second restart did not carry over"
echo "drop counters across restarts ok"
