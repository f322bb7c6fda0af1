#!/usr/bin/env bash
# How soon an alert resolves after its fault ends (docs/operations.md,
# "Alerts": a suspect recovered once it was healthy for one persistence
# window). argus-sim runs a compute straggler from step 20 to step 80 of a
# job that goes on to step 260; the alert fires, and its resolve reaches a
# webhook while the job still runs, at most diag.window (40) steps after the
# fault ended plus 10 (diagnosis behind, the measure: the firing change's
# step and time, and the pace of the collector's step count polled
# alongside). Before, it took diag.window + alerts.resolve_after (60) steps
# after the last periodic report naming it: step 139 here (measured 135;
# 120 now).
# test-cpu: idle: one sim at 10 steps a second (26 s), polled
source "$(dirname "$0")/lib.sh"

WPORT=$(free_port)
/usr/bin/python3 "$(dirname "$0")/alerts_receiver.py" "$WPORT" "$T/webhook.log" 0 &
PIDS+=($!)
wait_for "the webhook receiver" 10 bash -c "echo >/dev/tcp/127.0.0.1/$WPORT"
start_collector "$T/store" --alerts.webhook "http://127.0.0.1:$WPORT/hook" --diag.job_idle 5m

# the collector's closed steps of the job, with the time, every 0.1 s
(
    while :; do
        s=$(curl -s "127.0.0.1:$HPORT/metrics" |
            awk '$1 == "argus_job_last_step{job=\"cs-end\"}" {print $2}')
        [[ -n $s ]] && echo "$(date +%s%N) $s"
        sleep 0.1
    done
) >"$T/steps.log" &
PIDS+=($!)

"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job cs-end --scenario compute-straggler \
    --ranks 16 --tp 2 --steps 260 --rate 10 --steps_per_batch 2 --seed 7 --onset 20 \
    --fault_end 80 >"$T/sim.json" || fail "sim failed: $(cat "$T/sim.json")"

resolved() { [[ -e $T/webhook.log ]] && grep -q '"status": "resolved"' "$T/webhook.log"; }
export -f resolved
export T
wait_every "the resolve at the webhook" 30 0.5 bash -c resolved
/usr/bin/python3 - "$T/webhook.log" "$T/steps.log" <<'PY' || fail "resolve time"
import json, sys
events = [json.loads(l)["body"] for l in open(sys.argv[1])]
status = [e["status"] for e in events]
assert status == ["firing", "resolved"], status
# anchor: the firing change was made (updated, collector clock) when the
# report's last step closed; the pace from the polled step counts (which
# lag a tick behind, the same lag at both ends of the fit)
fired_step = int(events[0]["report"]["to_step"])
fired_at = int(events[0]["alert"]["updated_unix_ns"])
at = int(events[1]["alert"]["resolved_unix_ns"])
polls = [(int(t), float(s)) for t, s in (l.split() for l in open(sys.argv[2]))]
polls = [(t, s) for t, s in polls if 10 <= s <= 250]
(t0, s0), (t1, s1) = polls[0], polls[-1]
rate = (s1 - s0) / ((t1 - t0) / 1e9)
step = fired_step + (at - fired_at) / 1e9 * rate
print("fired at step %d; %.1f steps/s; fault ended at step 80, resolved at step %.0f"
      % (fired_step, rate, step))
assert 80 + 30 <= step <= 80 + 40 + 10, "resolved at step %.0f" % step
PY
echo "alerts resolve time ok"
