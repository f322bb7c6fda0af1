#!/usr/bin/env bash
# Kernel identity sets (agent/delivery/ksets.h, collector/ingest/kernel_sets.h)
# with a real agent and real collectors: the agent replays recorded step
# records (argus-sim --record, 8 ranks x 300 steps: a minute of replay, room
# for a loaded machine's slow restarts) slowly, in batches of a few ranks, so
# that each batch's first record refers to its skeleton's set once a batch
# that defined it was acked;
#   - the collector decodes every reference (none unknown);
#   - killed and restarted on its store: the sets are read back from disk,
#     references go on, none unknown;
#   - killed and restarted on an empty store (its disk lost): the references
#     in flight are counted unknown and the ack says so; the agent defines
#     every set again, references resume and no more are unknown.
# test-cpu: idle: a fixed-rate replay into one collector
source "$(dirname "$0")/lib.sh"

"$BIN/argus-sim" --job ks --ranks 8 --steps 300 --record "$T/rec.bin" >"$T/rec.json" ||
    fail "could not record: $(cat "$T/rec.json")"
start_collector "$T/store"
start_agent "$T/spool" --replay.records "$T/rec.bin" --replay.rate 40 --batch.max_age 100ms

referred() { metric "$HPORT" argus_ingest_kernel_sets_referred_total; }
unknown() { metric "$HPORT" argus_ingest_kernel_sets_unknown_total; }
more_referred() { local r; r=$(referred); [[ -n $r ]] && ((r >= $1)); }

wait_for "records sent as a kernel set" 20 more_referred 3
[[ $(unknown) == 0 ]] || fail "$(unknown) references unknown to the collector that holds the sets"
log "the collector decoded $(referred) references"

# a restart on its store: the sets come back from disk
kill "$COLLECTOR_PID"
wait "$COLLECTOR_PID" 2>/dev/null
start_collector "$T/store"
wait_for "references after a restart" 20 more_referred 3
[[ $(unknown) == 0 ]] || fail "after a restart on its store: $(unknown) references unknown"
log "restarted on its store: $(referred) references decoded, none unknown"

# the store lost: references in flight are unknown, then the agent defines again
kill -9 "$COLLECTOR_PID"
wait "$COLLECTOR_PID" 2>/dev/null
start_collector "$T/store2"
wait_for "the agent to define its sets again" 20 grep -q "defining every set again" "$T/agent.log"
u=$(unknown)
wait_for "references to the sets defined again" 20 more_referred 3
sleep 1
[[ $(unknown) == "$u" ]] || fail "references still unknown after the agent defined again: $u then $(unknown)"
defined=$(metric "$HPORT" argus_ingest_kernel_sets_defined_total)
((defined >= 1)) || fail "the new store holds no set"
log "store lost: $u references unknown (in flight), then the sets defined again, $(referred) decoded"
echo "PASS: kernel sets decoded, across a restart, and defined again after a lost store"
