#!/usr/bin/env bash
# Unreachable is not silent: two real agents replay one job (ranks 0-1 on
# node-a, 2-3 on node-b); node-b reaches the collector through tcp_proxy.py,
# which is stopped for 3 x diag.silence (a link cut: the agent spools) and
# started again. While it is away the collector counts it unreachable
# (argus_ingest_agents_unreachable) and raises no silence finding, node or
# rank (it raised "node silent" before); once back it drains its spool and
# nothing is unreachable.
# test-cpu: idle: two agents replaying at 10 steps/s, a fixed cut
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

cmetric() { curl -s "127.0.0.1:$HPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
silent_findings() {
    curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 ~ /^argus_diag_silent_findings_total/ {n += $2} END {print n + 0}'
}
proxy() {
    /usr/bin/python3 "$REPO/tests/integration/tcp_proxy.py" "$PPORT" "127.0.0.1:$CPORT" \
        >>"$T/proxy.log" 2>&1 &
    PROXY_PID=$!
    PIDS+=("$PROXY_PID")
}

start_collector "$T/store" --diag.silence 4s --diag.stream_hold 2s --diag.step_timeout 2s
PPORT=$(free_port)
proxy
replay=(--replay.trace "$TRACE" --replay.ranks 2 --replay.world 4 --replay.rate 10
    --replay.steps 100000 --replay.job cut)
start_agent "$T/spool-a" "${replay[@]}" --replay.rank_base 0 --node.name node-a
APORT_A=$APORT
APORT=$(free_port)
CPORT_REAL=$CPORT
CPORT=$PPORT start_agent "$T/spool-b" "${replay[@]}" --replay.rank_base 2 --node.name node-b
APORT_B=$APORT
wait_for "both agents delivering" 30 bash -c "(( \$(curl -s 127.0.0.1:$APORT_B/metrics | awk '\$1==\"argus_agent_spool_records\"{print \$2}') == 0 )) && [[ \$(curl -s 127.0.0.1:$APORT_B/metrics | awk '\$1==\"argus_agent_collector_connected\"{print \$2}') == 1 && \$(curl -s 127.0.0.1:$HPORT/metrics | awk '\$1==\"argus_ingest_streams\"{print \$2}') == 2 ]]"
sleep 6 # both well seen by diagnosis
[[ $(silent_findings) == 0 ]] || fail "silence findings before the cut"

log "cutting node-b's link for 12 s (diag.silence 4s)"
kill -9 "$PROXY_PID"
wait_for "node-b counted unreachable" 20 bash -c "[[ \$(curl -s 127.0.0.1:$HPORT/metrics | awk '\$1==\"argus_ingest_agents_unreachable\"{print \$2}') == 1 ]]"
sleep 12
spooled=$(metric "$APORT_B" argus_agent_spool_records)
((spooled > 0)) || fail "node-b spooled nothing while cut off"
n=$(silent_findings)
((n == 0)) || fail "node-b was only cut off, yet $n silence findings were raised"

log "restoring the link ($spooled records spooled)"
proxy
wait_for "node-b's spool to drain" 30 bash -c "[[ \$(curl -s 127.0.0.1:$APORT_B/metrics | awk '\$1==\"argus_agent_spool_records\"{print \$2}') == 0 ]]"
wait_for "nothing unreachable" 10 bash -c "[[ \$(curl -s 127.0.0.1:$HPORT/metrics | awk '\$1==\"argus_ingest_agents_unreachable\"{print \$2}') == 0 ]]"
sleep 6
n=$(silent_findings)
((n == 0)) || fail "$n silence findings after node-b came back and drained"
echo "node unreachable ok"
