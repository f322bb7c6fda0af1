#!/usr/bin/env bash
# What must page nobody: a healthy job, a data-skew job (slowness that
# moves from rank to rank) and an imbalance job (one rank doing more work on
# a healthy host: its owner's finding) fire no alert, not even a pending one. A webhook receiver stands in for
# on-call; diagnosis has run over both jobs (the skew job's report is
# stored, every step of the healthy one closed) and a job with a compute
# straggler, run last, does reach the receiver: the sink works, and it is
# the only alert that arrives.
# test-cpu: idle: short sim runs, then waits on the webhook
source "$(dirname "$0")/lib.sh"

WPORT=$(free_port)
/usr/bin/python3 "$(dirname "$0")/alerts_receiver.py" "$WPORT" "$T/webhook.log" 0 &
PIDS+=($!)
wait_for "the webhook receiver" 10 bash -c "echo >/dev/tcp/127.0.0.1/$WPORT"
start_collector "$T/store" --alerts.webhook "http://127.0.0.1:$WPORT/" --alerts.backoff_max 1s
for scn in healthy data-skew imbalance compute-straggler; do
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$scn" --scenario "$scn" --ranks 64 \
        --steps 100 --rate 50 --steps_per_batch 2 --tp 2 --seed 7 >"$T/$scn.json" ||
        fail "$scn: sim failed: $(cat "$T/$scn.json")"
done
has_reports() { ctl --json stragglers --job "$1" | grep -q '"id"'; }
export -f has_reports ctl
export BIN CPORT T
wait_every "data-skew's report" 60 0.5 bash -c "has_reports data-skew"
wait_every "imbalance's report" 60 0.5 bash -c "has_reports imbalance"
closed() { [[ $(metric "$HPORT" argus_diag_steps_closed_total) -ge 400 ]]; }
wait_every "every step of the four jobs closed" 60 0.5 closed
wait_every "the straggler's alert at the webhook" 60 0.5 bash -c "grep -q compute-straggler $T/webhook.log"
sleep 2 # anything else on its way gets there too
/usr/bin/python3 - "$T/webhook.log" <<'PY' || fail "alerts: $(cat "$T/webhook.log")"
import json, sys
jobs = [json.loads(l)["body"]["alert"]["job"] for l in open(sys.argv[1])]
assert set(jobs) == {"compute-straggler"}, jobs
PY
curl -sf "127.0.0.1:$HPORT/metrics" >"$T/metrics.txt" || fail "no /metrics from the collector"
grep -q '^argus_alerts_firing' "$T/metrics.txt" || fail "no argus_alerts_firing series at all"
grep -E '^argus_alerts_firing\{job="(healthy|data-skew|imbalance)"' "$T/metrics.txt" &&
    fail "a quiet job has an alert firing"
ctl alerts >"$T/alerts.txt" || fail "argusctl alerts"
grep -Eq ' (healthy|data-skew|imbalance) ' "$T/alerts.txt" &&
    fail "a quiet job has an alert: $(cat "$T/alerts.txt")"
echo "healthy, data-skew and imbalance fire nothing"
