#!/usr/bin/env bash
# SIGHUP reloads the config, validating it first (a bad file keeps the
# running config); SIGTERM flushes and exits 0 within 5 s, also while the
# collector is unreachable and batches wait in the spool. Same for the
# collector.
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

printf '[log]\nlevel = info\n' >"$T/agent.conf"
start_agent "$T/spool" --config "$T/agent.conf" --replay.trace "$TRACE" --replay.ranks 2 \
    --replay.rate 20
printf '[log]\nlevel = debug\n[cupti]\nsample_mode = steps\nsample_k = 1\nsample_n = 4\n' >"$T/agent.conf"
kill -HUP "$AGENT_PID"
wait_for "reload" 5 grep -q "reloaded: every change applied" "$T/agent.log"
for change in "log.level: 'info' -> 'debug' (applied live)" \
    "cupti.sample_mode: 'always' -> 'steps' (applied live)" \
    "cupti.sample_n: '1' -> '4' (applied live)"; do
    grep -qF "$change" "$T/agent.log" || fail "reload did not log: $change"
done
printf '[log]\nlevel = loud\n[spool]\nfsync = sometimes\n' >"$T/agent.conf"
kill -HUP "$AGENT_PID"
wait_for "rejected reload" 5 grep -q "reload rejected, keeping the running config" "$T/agent.log"
curl -sf "127.0.0.1:$APORT/healthz" >/dev/null || fail "agent unhealthy after a rejected reload"
sleep 1
t0=$(date +%s.%N)
kill -TERM "$AGENT_PID"
wait "$AGENT_WAIT_PID"; rc=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
log "agent exited $rc after SIGTERM in ${took}s (collector unreachable)"
[[ $rc == 0 ]] || fail "agent exit status $rc"
(( $(echo "$took < 5" | bc) )) || fail "agent took ${took}s to stop"
grep -q "stopped" "$T/agent.log" || fail "no clean stop in the log"

start_collector "$T/store"
kill -HUP "$COLLECTOR_PID"
wait_for "collector reload" 5 grep -q "reloaded: no key changed" "$T/collector.log"
t0=$(date +%s.%N)
kill -TERM "$COLLECTOR_PID"; wait "$COLLECTOR_PID"; rc=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
[[ $rc == 0 ]] || fail "collector exit status $rc"
(( $(echo "$took < 5" | bc) )) || fail "collector took ${took}s to stop"
echo "signals ok"
