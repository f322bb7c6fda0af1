#!/usr/bin/env bash
# collector.dns: the agent finds its collectors by a DNS name (here
# localhost, as a headless Service would give one address per pod),
# resolved again every collector.dns_interval. A collector that is not up
# yet is not fatal: batches wait in the spool, and once it answers they are
# delivered, every step once. The per-collector metrics name the
# member. collector.set and collector.dns together are refused at start.
# test-cpu: idle: one agent replaying 4 ranks at 10 steps/s into one collector
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"
getent hosts localhost >/dev/null || skip "localhost does not resolve"

out=$("$BIN/argus-agent" --collector.set "127.0.0.1:1" --collector.dns "localhost:1" \
    --print-config 2>&1) && fail "collector.set with collector.dns was accepted"
grep -q "collector.set and collector.dns" <<<"$out" || fail "unclear error: $out"

start_agent "$T/spool" --collector.dns "localhost:$CPORT" --collector.dns_interval 1s \
    --replay.trace "$TRACE" --replay.ranks 4 --replay.rate 10 --replay.steps 60 \
    --replay.job dnsjob --batch.max_age 200ms
grep -q "collectors localhost:$CPORT" "$T/agent.log" || fail "the start log line does not name the set"
sleep 2
((${spooled:=$(metric "$APORT" argus_agent_spool_records)} > 0)) \
    || fail "expected batches to wait with no collector up, got $spooled"
start_collector "$T/store"
wait_for "the job's closed steps to arrive" 60 bash -c \
    "$BIN/argusctl --collector 127.0.0.1:$CPORT jobs | awk '\$1 == \"dnsjob\" && \$5 >= 236 {ok=1} END {exit !ok}'"
# the per-collector lines are rendered once a second
wait_for "a connected member on :$CPORT in /metrics" 5 bash -c \
    "curl -s 127.0.0.1:$APORT/metrics | grep -q '^argus_agent_collector_member_connected{collector=\".*:$CPORT\"} 1'"
log "members: $(curl -s "127.0.0.1:$APORT/metrics" | grep '^argus_agent_collector_member_connected{')"
read -r kmin kmax total lo < <(check_job dnsjob 4) || fail "lost or duplicated steps"
[[ $lo == 0 ]] || fail "first step $lo"
((kmin >= 59)) || fail "only $kmin steps per rank"
echo "dns ok"
