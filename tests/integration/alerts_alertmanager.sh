#!/usr/bin/env bash
# Alerts to a real Alertmanager (Debian's prometheus-alertmanager on
# loopback, started here): a compute straggler from the simulator fires
# exactly one alert with the labels on-call reads (job, cause, rank, node,
# gpu, level, severity, the report link), re-sent while it fires (endsAt
# moves ahead) and listed by argusctl alerts; when the job ends it is
# resolved and Alertmanager drops it; a rank that recovers while the job
# goes on (argus-sim --fault_end) is resolved by clean steps. Then, with Alertmanager down while a second
# straggler fires, the alert waits in the store's queue (counted in
# /metrics); the collector is killed -9 meanwhile and started again on the
# same store; once Alertmanager is back, the alert arrives.
# test-cpu: idle: waits on Alertmanager's sends, resends and resolves
source "$(dirname "$0")/lib.sh"

AM=$(command -v prometheus-alertmanager || command -v alertmanager || true)
[[ -n $AM ]] || skip "no prometheus-alertmanager binary (apt-get install prometheus-alertmanager)"
if command -v amtool >/dev/null; then
    amtool check-config "$REPO/deploy/alertmanager/alertmanager.yml" >"$T/amtool.txt" 2>&1 ||
        fail "the shipped Alertmanager route: $(cat "$T/amtool.txt")"
fi
AMPORT=$(free_port)
cat >"$T/am.yml" <<'YML'
route:
  receiver: blackhole
  group_wait: 1s
receivers:
  - name: blackhole
YML

start_am() { # storage dir
    "$AM" --config.file="$T/am.yml" --storage.path="$1" --web.listen-address="127.0.0.1:$AMPORT" \
        --cluster.listen-address= >>"$T/am.log" 2>&1 &
    AM_PID=$!
    PIDS+=("$AM_PID")
    wait_for "alertmanager on :$AMPORT" 30 curl -sf "127.0.0.1:$AMPORT/-/ready"
}
am_alerts() { curl -sf "127.0.0.1:$AMPORT/api/v2/alerts" >"$T/am.json"; }
am_count() { # JOB: how many alerts of job Alertmanager holds (active or not)
    am_alerts && /usr/bin/python3 -c 'import json,sys
print(sum(a["labels"].get("job") == sys.argv[2] for a in json.load(open(sys.argv[1]))))' \
        "$T/am.json" "$1"
}
has_alert() { [[ $(am_count "$1") -ge 1 ]]; }
no_alert() { [[ $(am_count "$1") == 0 ]]; }
export -f am_alerts am_count has_alert no_alert
export T AMPORT
sim() { # JOB SCENARIO
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$1" --scenario "$2" --ranks 64 \
        --steps "${SIM_STEPS:-100}" --rate "${SIM_RATE:-50}" --steps_per_batch 2 --tp 2 --seed 7 \
        ${SIM_END:+--fault_end "$SIM_END"} >"$T/$1.json" ||
        fail "$1: sim failed: $(cat "$T/$1.json")"
    tail -1 "$T/$1.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])'
}
COLLECTOR_FLAGS=(--alerts.alertmanager "http://127.0.0.1:$AMPORT"
    --alerts.report_url 'http://argus.example/report/{id}?job={job}'
    --alerts.backoff_max 1s --alerts.http_timeout 2s)

log "firing, then resolved when the job ends"
start_am "$T/am1"
start_collector "$T/store" "${COLLECTOR_FLAGS[@]}" --diag.job_idle 15s --alerts.resend 2s
culprit=$(sim cs-am compute-straggler)
wait_every "the straggler's alert in Alertmanager" 90 0.5 bash -c "has_alert cs-am"
sleep 3 # one alert, not one now and more later: give a second one time to show
am_alerts
/usr/bin/python3 - "$T/am.json" "$culprit" <<'PY' || fail "Alertmanager's alerts: $(cat "$T/am.json")"
import json, sys
alerts = [a for a in json.load(open(sys.argv[1])) if a["labels"].get("job") == "cs-am"]
assert len(alerts) == 1, "want exactly one alert, got %d" % len(alerts)
a = alerts[0]
l = a["labels"]
assert l["alertname"] == "ArgusStraggler", l
assert l["cause"] == "compute", l
assert l["rank"] == sys.argv[2], (l, sys.argv[2])
assert l["severity"] == "page", l
# one straggler of its node: the subject is its rank (node-wide evidence only names the node)
assert l["node"].startswith("node") and l["subject"] == "rank:" + l["rank"], l
assert l["gpu"].isdigit() and l["level"] in ("L2", "L3"), l
assert a["status"]["state"] == "active", a["status"]
ann = a["annotations"]
assert ann["report"].startswith("http://argus.example/report/") and ann["report"].endswith("?job=cs-am"), ann
assert "persisted" in ann["evidence"] and ann["summary"], ann
print("one alert:", l)
PY
[[ $(metric "$HPORT" 'argus_alerts_firing{job="cs-am",cause="compute"}') == 1 ]] ||
    fail "argus_alerts_firing for cs-am: $(curl -s "127.0.0.1:$HPORT/metrics" | grep alerts_firing)"
ends_at() { am_alerts && /usr/bin/python3 -c 'import json,sys
print([a["endsAt"] for a in json.load(open(sys.argv[1])) if a["labels"]["job"] == "cs-am"][0])' "$T/am.json"; }
first_end=$(ends_at)
later_end() { [[ $(ends_at) > $first_end ]]; }
export -f ends_at later_end
export first_end
wait_every "a re-send (alerts.resend 2s) moving endsAt ahead" 30 0.5 bash -c later_end
ctl alerts >"$T/ctl.txt" || fail "argusctl alerts failed"
grep -Eq "^FIRING +[0-9]+s +cs-am +COMPUTE +rank:$culprit +$culprit " "$T/ctl.txt" ||
    fail "argusctl alerts: $(cat "$T/ctl.txt")"
ctl --json alerts --job cs-am | /usr/bin/python3 -c 'import json,sys
a = json.load(sys.stdin)["alerts"]
assert len(a) == 1 and a[0]["status"] == "ALERT_STATUS_FIRING", a' || fail "argusctl --json alerts"
# the job has ended: diag.job_idle (15 s) later its alert is resolved; a
# resolved alert (endsAt past) leaves Alertmanager's list
wait_every "the alert resolved in Alertmanager" 90 0.5 bash -c "no_alert cs-am"
grep -q "resolved: job cs-am" "$T/collector.log" || fail "no resolve logged: $(grep alerts "$T/collector.log")"
ctl alerts --job cs-am | grep -Eq "^resolved +[0-9]+s +cs-am +COMPUTE" || fail "argusctl alerts: $(ctl alerts)"

log "Alertmanager down while it fires, collector killed -9, both back: it arrives"
kill -9 "$AM_PID"
wait "$AM_PID" 2>/dev/null
culprit=$(sim cs-down compute-straggler)
queued() { [[ $(metric "$HPORT" 'argus_alerts_queued{sink="alertmanager",target="http://127.0.0.1:'"$AMPORT"'"}') -ge 1 ]]; }
wait_every "the alert queued while Alertmanager is down" 90 0.5 queued
failed=$(metric "$HPORT" 'argus_alerts_failed_total{sink="alertmanager",target="http://127.0.0.1:'"$AMPORT"'"}')
[[ $failed -ge 1 ]] || fail "no failed delivery counted: $failed"
kill -9 "$COLLECTOR_PID"
wait "$COLLECTOR_PID" 2>/dev/null
# a long job_idle: the job must not end (and resolve) before Alertmanager is up
start_collector "$T/store" "${COLLECTOR_FLAGS[@]}" --diag.job_idle 10m
grep -q "sink alertmanager http://127.0.0.1:$AMPORT ([1-9][0-9]* queued)" "$T/collector.log" ||
    fail "restart did not take the queue back: $(grep alerts "$T/collector.log")"
start_am "$T/am2" # a fresh Alertmanager: nothing from before
wait_every "the queued alert in Alertmanager after both restarts" 90 0.5 bash -c "has_alert cs-down"
am_alerts
/usr/bin/python3 - "$T/am.json" "$culprit" <<'PY' || fail "after restart: $(cat "$T/am.json")"
import json, sys
alerts = [a for a in json.load(open(sys.argv[1])) if a["labels"].get("job") == "cs-down"]
assert len(alerts) == 1 and alerts[0]["labels"]["rank"] == sys.argv[2], alerts
PY
log "the rank recovers while the job goes on (job_idle 10m): resolved once healthy for a window"
sent_am() { metric "$HPORT" 'argus_alerts_sent_total{sink="alertmanager",target="http://127.0.0.1:'"$AMPORT"'"}'; }
sent0=$(sent_am)
culprit=$(SIM_STEPS=300 SIM_RATE=20 SIM_END=70 sim cs-rec compute-straggler)
resolved_rec() {
    ctl --json alerts --job cs-rec | /usr/bin/python3 -c 'import json, sys
a = json.load(sys.stdin).get("alerts", [])
sys.exit(0 if len(a) == 1 and a[0]["status"] == "ALERT_STATUS_RESOLVED" else 1)'
}
wait_every "the recovered rank's alert resolved" 120 1 resolved_rec
ctl --json alerts --job cs-rec | /usr/bin/python3 -c 'import json, sys
a = json.load(sys.stdin)["alerts"]
assert len(a) == 1 and a[0]["ranks"] == [int(sys.argv[1])], a
assert int(a[0]["firing_unix_ns"]) > 0, ("never fired", a)' "$culprit" || fail "cs-rec: $(ctl --json alerts --job cs-rec)"
# Alertmanager got the firing and the resolve (endsAt in the past): no active alert left
wait_every "Alertmanager: the recovered rank's alert gone" 60 0.5 bash -c "no_alert cs-rec"
(($(sent_am) >= sent0 + 2)) || fail "Alertmanager got $(($(sent_am) - sent0)) deliveries for cs-rec, want firing and resolved"
echo "alerts to Alertmanager ok"
