#!/usr/bin/env bash
# argus is never blind in silence (docs/operations.md "When diagnosis sheds
# work"). A collector whose per-job diagnosis budget is set small
# (diag.max_open_bytes 1 MiB) takes a 1,024-rank simulated job with a
# compute straggler: its steps close early for memory and late records are
# dropped. It must say so: a warning naming the job, argus_diag_degraded
# {job,reason="memory"} 1 and argus_job_diag_shed_records_total in /metrics,
# the job marked BLIND in argusctl jobs and on its web page, and an
# ArgusBlind alert (severity warning, subject "job") at a real Alertmanager.
# The same job on a collector with the default budget sheds nothing and
# raises nothing of the kind.
# test-cpu: idle: a simulated job at 10 steps/s and Alertmanager's timeouts
source "$(dirname "$0")/lib.sh"

start_am_cluster
start_collector "$T/store" --diag.max_open_bytes 1MiB --alerts.alertmanager "$AM_SINK" \
    --alerts.backoff_max 1s
sim() { # PORT JOB
    "$BIN/argus-sim" --collector "127.0.0.1:$1" --job "$2" --scenario compute-straggler \
        --ranks 1024 --steps 60 --rate 10 >"$T/sim.$2.json" 2>&1 || fail "sim $2: $(cat "$T/sim.$2.json")"
}
on_fail() {
    grep -E "diagnosis|alerts" "$T/collector.log" | tail -n 8
    curl -s "127.0.0.1:$HPORT/metrics" | grep -E "^argus_(diag_degraded|job_diag_shed|diag_budget)"
}
sim "$CPORT" small
grep -q "job small: diagnosis sheds work (ArgusBlind): memory: .* steps closed early, .*% of records not diagnosed" \
    "$T/collector.log" || fail "no warning for the job"
log "$(grep -o 'job small: diagnosis sheds work.*' "$T/collector.log" | head -1)"
shed=$(curl -s "127.0.0.1:$HPORT/metrics" |
    awk '$1 == "argus_job_diag_shed_records_total{job=\"small\",reason=\"memory\"}" {print $2}')
((${shed:-0} > 0)) || fail "argus_job_diag_shed_records_total for small: '$shed'"
ctl jobs | grep -E "^small .*BLIND memory: " || fail "argusctl jobs does not mark the job: $(ctl jobs)"
curl -s "127.0.0.1:$HPORT/job/small" | grep -q "blind in part (ArgusBlind)" ||
    fail "the job page does not mark the job"
ctl --json alerts --job small | /usr/bin/python3 -c 'import json,sys
a = [x for x in json.load(sys.stdin).get("alerts", []) if x["cause"] == "CAUSE_DIAG_BLIND"]
assert len(a) == 1 and a[0]["subject"] == "job", a' || fail "argusctl alerts: $(ctl alerts --job small)"
blind_note() {
    [[ -s $T/notes.jsonl ]] && /usr/bin/python3 -c 'import json,sys
for l in open(sys.argv[1]):
    for a in json.loads(l)["body"]["alerts"]:
        x = a["labels"]
        if x.get("job") == "small" and x.get("alertname") == "ArgusBlind":
            assert x["severity"] == "warning" and x["cause"] == "diag_blind" and x["subject"] == "job", x
            sys.exit(0)
sys.exit(1)' "$T/notes.jsonl"
}
wait_every "an ArgusBlind notification" 60 1 blind_note
log "ArgusBlind notified: shed $shed records"

# the default budget: nothing shed, nothing said
C2=$(free_port) H2=$(free_port)
start_collector_on "$C2" "$H2" "$T/store2"
sim "$C2" whole
sleep 2
m=$(curl -s "127.0.0.1:$H2/metrics")
grep -q '^argus_diag_degraded{job="whole",reason="memory"} 0' <<<"$m" ||
    fail "default budget: $(grep -E 'degraded|shed' <<<"$m")"
grep -q 'job whole: diagnosis sheds work' "$T/collector.log" && fail "default budget: a shedding warning"
CPORT=$C2 ctl jobs | grep -q "BLIND" && fail "default budget: the job marked BLIND"
echo "never blind in silence ok"
