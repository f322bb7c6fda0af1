#!/usr/bin/env bash
# Rank ownership under mTLS (issue 31), with real certificates made now by
# deploy/pki/make-pki.sh and real agents replaying a Kineto trace: node-b's
# agent writes ranks 8-9 of job own and owns them; node-a's agent, with its own
# valid certificate, replays rank 8 of the same job: every batch is refused
# with PERMISSION_DENIED naming the rank, the job, node-b and node-a (the
# agent logs the collector's sentence and keeps the batch), counted in
# argus_collector_rank_owner_refused_total; nothing of it is stored. The
# ownership survives a collector restart (stored). Once node-b's agent is
# stopped and silent past diag.job_idle (4 s here), node-a's next retry moves
# rank 8 to it, logged ("moves from node-b to node-a") and counted.
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || skip "no openssl to make the test PKI"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"
unset ARGUS_GRPC_PLAINTEXT
P=$T/pki
"$REPO/deploy/pki/make-pki.sh" "$P" --collector collector --agent node-a --agent node-b \
    --query ops >/dev/null

qctl() {
    "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --timeout 5s --tls.ca "$P/ca.crt" \
        --tls.cert "$P/query-ops.crt" --tls.key "$P/query-ops.key" "$@"
}
log_has() { grep -qF -- "$1" "$T/collector.log"; }
metric() { curl -s "127.0.0.1:$HPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# the node of rank R of job own, as the query API says (ranks)
node_of() { qctl --json ranks --job own | /usr/bin/python3 -c \
    'import json,sys; print(next((r.get("node", "") for r in json.load(sys.stdin)["ranks"] if r.get("rank", 0) == int(sys.argv[1])), ""))' "$1"; }

collector() {
    "$BIN/argus-collector" --grpc.listen "127.0.0.1:$CPORT" --http.listen "127.0.0.1:$HPORT" \
        --store.dir "$T/store" --tls.ca "$P/ca.crt" --tls.cert "$P/collector.crt" \
        --tls.key "$P/collector.key" --diag.job_idle 4s >>"$T/collector.log" 2>&1 &
    COLLECTOR_PID=$!
    PIDS+=("$COLLECTOR_PID")
    wait_for "collector (mTLS) on :$CPORT" 15 qctl jobs
}
agent() { # NAME NODE RANK_BASE RANKS
    "$BIN/argus-agent" --collector.address "127.0.0.1:$CPORT" --spool.dir "$T/spool.$1" \
        --http.listen "" --node.name "$2" --tls.ca "$P/ca.crt" --tls.cert "$P/agent-$2.crt" \
        --tls.key "$P/agent-$2.key" --collector.backoff_max 1s --cupti.socket "$T/cupti.$1.sock" \
        --probes.enable "" --replay.trace "$TRACE" --replay.job own --replay.world 16 \
        --replay.rank_base "$3" --replay.ranks "$4" --replay.rate 20 --batch.max_age 200ms \
        >>"$T/agent.$1.log" 2>&1 &
    PIDS+=($!)
}

collector
agent owner node-b 8 2
OWNER_PID=${PIDS[-1]}
wait_for "node-b's ranks 8-9 stored" 30 bash -c "[[ \$($(declare -f qctl node_of); \
    CPORT=$CPORT BIN=$BIN P=$P node_of 8) == node-b ]]"
log "node-b owns rank 8 of job own"

agent intruder node-a 8 1
wait_for "node-a's batches refused" 30 log_has \
    "rank 8 of job own belongs to 'node-b' (its last record"
log_has "'node-a' may not write it" || fail "the refusal does not name node-a"
wait_for "the agent told why" 20 grep -q "status 7: rank 8 of job own belongs to 'node-b'" \
    "$T/agent.intruder.log"
wait_for "refusals counted" 10 bash -c \
    "(( \$($(declare -f metric); HPORT=$HPORT metric argus_collector_rank_owner_refused_total) >= 2 ))"
refused=$(metric argus_collector_rank_owner_refused_total)
logged=$(grep -c "refused a batch of agent node-a: rank 8 of job own" "$T/collector.log")
((logged == 1)) || fail "the refusal logged $logged times for $refused refusals (want once)"
[[ $(metric 'argus_ingest_rejects_total{reason="rank_owner"}') -ge 2 ]] ||
    fail "rank_owner rejects not counted"
[[ $(node_of 8) == node-b ]] || fail "rank 8's resource is $(node_of 8)'s now"
log "node-a writing rank 8: refused $refused times, logged once; rank 8 still node-b's"

# a restart keeps the table: node-a is still refused, node-b still stored
kill "$COLLECTOR_PID" && wait "$COLLECTOR_PID" 2>/dev/null
mv "$T/collector.log" "$T/collector.log.1"
collector
log_has "rank owners loaded:" || wait_for "the table loaded" 5 log_has "rank owners loaded:"
wait_for "node-a refused after the restart" 30 log_has "rank 8 of job own belongs to 'node-b'"
log_has "moves from" && fail "rank 8 moved across the restart: $(grep 'moves from' "$T/collector.log")"
log "after a collector restart node-a is still refused"

# node-b goes away: after diag.job_idle of silence rank 8 moves to node-a
kill "$OWNER_PID"
wait_for "rank 8 to move to node-a" 30 log_has \
    "rank 8 of job own moves from node-b to node-a: node-b sent none of its records for"
wait_for "node-a's rank 8 stored" 20 bash -c "[[ \$($(declare -f qctl node_of); \
    CPORT=$CPORT BIN=$BIN P=$P node_of 8) == node-a ]]"
(($(metric argus_collector_rank_owner_moves_total) >= 1)) || fail "the move is not counted"
grep "moves from node-b to node-a" "$T/collector.log" | head -1
echo "tls rank owner ok"
