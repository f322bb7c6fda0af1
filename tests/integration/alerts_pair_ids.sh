#!/usr/bin/env bash
# The primary and the standby of a job say the same thing (issue 28): two
# collectors fed the same records (two simulator runs with one seed and one
# --base_time, so the same record contents, each delivered with its own
# realistic delays and jitter at its own moments, as a job's agents send each
# batch to both) give the same report ids and the same alerts: alert id,
# labels, report id and link, created and firing times (Alertmanager's
# startsAt) from the records, not from either collector's clock.
# test-cpu: idle: fixed-rate simulator replays
source "$(dirname "$0")/lib.sh"

FLAGS=(--alerts.report_url 'http://argus.example/report/{id}?job={job}')
start_collector "$T/store-a" "${FLAGS[@]}"
C2=$(free_port) H2=$(free_port)
start_collector_on "$C2" "$H2" "$T/store-b" "${FLAGS[@]}"
base=$(($(date +%s) * 1000000000 - 3600000000000)) # an hour ago: not either collector's now
for p in "$CPORT" "$C2"; do
    "$BIN/argus-sim" --collector "127.0.0.1:$p" --job pair --scenario compute-straggler --ranks 64 \
        --steps 120 --rate 40 --steps_per_batch 2 --tp 2 --seed 7 --base_time "$base" \
        >"$T/sim.$p.json" 2>&1 &
    PIDS+=($!)
    sleep 1.3 # the second run at other moments of the collectors' clocks
done
wait_for "both simulated jobs" 120 bash -c "[[ -s $T/sim.$CPORT.json && -s $T/sim.$C2.json ]] && ! pgrep -f 'argus-sim --collector 127.0.0.1:($CPORT|$C2) ' >/dev/null"

# what one collector said of the job: its report ids and its alerts, less
# updated/resolved times (this collector's clock: docs/design.md section 8)
said() {
    CPORT=$1 ctl --json stragglers --all --job pair >"$T/rep.$1" &&
        CPORT=$1 ctl --json alerts --job pair >"$T/al.$1" &&
        /usr/bin/python3 - "$T/rep.$1" "$T/al.$1" <<'PY'
import json, sys
reps = json.load(open(sys.argv[1])).get("reports", [])
alerts = json.load(open(sys.argv[2])).get("alerts", [])
for a in alerts:
    for k in ("updated_unix_ns", "resolved_unix_ns", "status"):
        a.pop(k, None)
print(json.dumps({"reports": sorted(r["id"] for r in reps),
                  "onsets": sorted(r.get("onset_unix_ns", "0") for r in reps),
                  "alerts": sorted(alerts, key=lambda a: a["id"])}, sort_keys=True))
PY
}
same() { said "$CPORT" >"$T/a.json" && said "$C2" >"$T/b.json" && cmp -s "$T/a.json" "$T/b.json" &&
    grep -q '"alerts": \[{' "$T/a.json"; }
for ((i = 0; i < 60; i++)); do # until both closed every step
    same && break
    sleep 1
done
same || fail "they differ: $(diff <(/usr/bin/python3 -m json.tool "$T/a.json") \
    <(/usr/bin/python3 -m json.tool "$T/b.json") | head -40)"
/usr/bin/python3 - "$T/a.json" "$base" <<'PY' || fail "ids or times not from the records: $(cat "$T/a.json")"
import json, sys
s, base = json.load(open(sys.argv[1])), int(sys.argv[2])
assert s["reports"], "no reports"
for rid, onset in zip(sorted(s["reports"]), sorted(s["onsets"])):
    assert int(onset) >= base and int(onset) < base + 600 * 10**9, (rid, onset)  # the records' hour
    assert rid.startswith("%020d-" % int(onset)), (rid, onset)
a = [x for x in s["alerts"] if x["cause"] == "CAUSE_COMPUTE"][0]
assert base <= int(a["firing_unix_ns"]) < base + 600 * 10**9, a  # startsAt: the records' time
assert a["report_id"] in s["reports"], a
print("identical: %d reports, %d alerts, alert %s firing at the records' %+.1f s" % (
    len(s["reports"]), len(s["alerts"]), a["id"], (int(a["firing_unix_ns"]) - base) / 1e9))
PY
echo "alerts pair ids ok"
