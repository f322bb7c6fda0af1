#!/usr/bin/env bash
# A collector restart is invisible to on-call (docs/operations.md "Restarts
# and upgrades"). Two real agents replay a real Kineto trace as one job of 4
# ranks (0-2 on testnode-a; rank 3 on testnode-b, its kernels 1.5 times as
# long: a compute straggler), and the collector pages through a real
# two-node Alertmanager cluster to a webhook receiver. Then the collector is
# restarted on the same store under the running job, once with SIGTERM and
# once with kill -9. Each time: the job's per-job series are back at the
# first scrape (no gap for RankStraggler to flap), the next reports still
# name the straggler's node and GPU (the agents declared them once, before
# the restart: they come back from the store), and Alertmanager holds the
# same one alert with the same labels and startsAt; the receiver got exactly
# one firing notification in all.
# test-cpu: idle: agents replaying at 1 step/s, Alertmanager's timeouts
source "$(dirname "$0")/lib.sh"
[[ -r $TRACE ]] || skip "no Kineto trace at $TRACE"

start_am_cluster
FLAGS=(--alerts.alertmanager "$AM_SINK" --alerts.backoff_max 1s --alerts.resend 2s)
start_collector "$T/store" "${FLAGS[@]}"
start_agent "$T/spool-a" --replay.trace "$TRACE" --replay.job rs --replay.ranks 3 \
    --replay.world 4 --replay.rate 1 --node.name testnode-a
APORT=$(free_port)
start_agent "$T/spool-b" --replay.trace "$TRACE" --replay.job rs --replay.ranks 1 \
    --replay.rank_base 3 --replay.world 4 --replay.rate 1 --replay.stretch 1.5 \
    --node.name testnode-b

on_fail() {
    ctl jobs
    ctl stragglers --job rs | tail -n 8
    curl -s "127.0.0.1:${AM_WEB[0]}/api/v2/alerts"
    echo
    cat "$T/notes.jsonl" 2>/dev/null | head -c 3000
    grep -E ' (warn|error) |brought back' "$T/collector.log" | tail -n 15
}

# the job's one active alert in Alertmanager: its labels and startsAt, as
# sorted JSON (fails unless exactly one)
am_alert() {
    curl -sf "127.0.0.1:${AM_WEB[0]}/api/v2/alerts" | /usr/bin/python3 -c 'import json,sys
a = [x for x in json.load(sys.stdin) if x["labels"].get("job") == "rs" and x["status"]["state"] == "active"]
assert len(a) == 1, a
print(json.dumps({"labels": a[0]["labels"], "startsAt": a[0]["startsAt"]}, sort_keys=True))'
}
wait_every "the straggler's alert in Alertmanager" 240 1 am_alert
before=$(am_alert)
log "alert: $before"
grep -q '"node": "testnode-b"' <<<"$before" || fail "the alert does not name testnode-b: $before"
series() { curl -s "127.0.0.1:$HPORT/metrics" | grep -E "^argus_job_top_straggler_slowdown\{[^}]*job=\"rs\""; }
series >/dev/null || fail "no argus_job_top_straggler_slowdown for job rs before the restart"

# a report created after $1 (ns) naming rank 3, and where it says rank 3 runs
new_report_node() {
    ctl --json stragglers --job rs | /usr/bin/python3 -c 'import json,sys
t = int(sys.argv[1])
for r in json.load(sys.stdin).get("reports", []):
    if int(r.get("created_unix_ns", 0)) > t:
        for s in r.get("suspects", []):
            if s.get("rank", 0) == 3:
                print(s.get("node", ""), s.get("gpu", -1), s.get("group", ""))
                sys.exit(0)
sys.exit(1)' "$1"
}

for sig in TERM KILL; do
    kill -$sig "$COLLECTOR_PID"
    wait "$COLLECTOR_PID" 2>/dev/null
    t0=$(date +%s%N)
    start_collector "$T/store" "${FLAGS[@]}"
    log "restarted after SIG$sig"
    # the first scrape: the job's series, from the store, before any report
    s=$(series) || fail "SIG$sig: the per-job series of rs are gone after the restart"
    log "first scrape: $s"
    grep -q "brought back from the store: placement of 4 ranks" "$T/collector.log" ||
        fail "SIG$sig: the job's placement was not taken back: $(grep diagnosis "$T/collector.log" | tail -3)"
    wait_every "a report after the restart naming rank 3" 150 1 new_report_node "$t0"
    read -r node gpu group <<<"$(new_report_node "$t0")"
    log "the first report after SIG$sig: rank 3 on node '$node' gpu $gpu group '$group'"
    [[ $node == testnode-b && $gpu != -1 && $group != unknown ]] ||
        fail "SIG$sig: a report after the restart says rank 3 runs on node '$node' gpu $gpu group '$group'"
    sleep 8 # past group_wait and a few resends: a second alert would show now
    after=$(am_alert) || fail "SIG$sig: Alertmanager does not hold exactly one active alert for rs"
    [[ $after == "$before" ]] || fail "SIG$sig: the alert changed: before $before, after $after"
done
n=$(am_firing rs)
log "firing notifications for job rs: $n"
((n == 1)) || fail "want exactly one firing notification across two restarts, got $n"
echo "restart invisible to on-call ok: one notification, same labels, series at the first scrape"
