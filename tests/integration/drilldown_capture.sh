#!/usr/bin/env bash
# Drill-down end to end: two agents replay a real Kineto trace as ranks 0-2
# (10 steps/s) and rank 3 (5 steps/s: its steps take twice as long), so
# diagnosis flags rank 3 and the collector asks the agents for a window of
# raw spans (Ack.captures -> Batch.traces). Checks: argusctl trace writes
# Chrome-trace JSON that parses, holds kernel spans of rank 3 inside the
# captured window around the flagged steps, spans of a healthy peer, and
# ProfilerStep# spans; /trace/ID.json serves the same; metrics count it.
. "$(dirname "$0")/lib.sh"
[[ -r $TRACE ]] || skip "no Kineto trace at $TRACE"
command -v curl >/dev/null || skip "no curl"

start_collector "$T/store" --diag.window 8 --diag.min_hits 4 --diag.step_timeout 60s
start_agent "$T/spool-a" --replay.trace "$TRACE" --replay.job drill --replay.ranks 3 \
    --replay.world 4 --replay.rate 10
APORT_A=$APORT
APORT=$(free_port)
start_agent "$T/spool-b" --replay.trace "$TRACE" --replay.job drill --replay.ranks 1 \
    --replay.rank_base 3 --replay.world 4 --replay.rate 5 --node.name testnode-b

report_id() {
    ctl --json stragglers --job drill >"$T/reports.json" 2>/dev/null || return 1
    /usr/bin/python3 - "$T/reports.json" <<'PY'
import json, sys
reps = json.load(open(sys.argv[1])).get("reports", [])
for r in reps:
    if r.get("pages") and any(s.get("rank", 0) == 3 and s.get("pages") for s in r.get("suspects", [])):
        print(r["id"]); sys.exit(0)
sys.exit(1)
PY
}
wait_every "a report that pages rank 3" 120 1 report_id
ID=$(report_id)
log "report $ID"

has_windows() {
    ctl trace "$ID" -o "$T/trace.json" >/dev/null 2>&1 || return 1
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["otherData"]["windows"]) >= 2 else 1)' "$T/trace.json"
}
wait_every "two captured windows of report $ID" 120 1 has_windows

/usr/bin/python3 - "$T/trace.json" <<'PY' || fail "trace JSON check"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
wins = {w["rank"]: w for w in d["otherData"]["windows"]}
assert 3 in wins, "no window of the flagged rank 3: %s" % list(wins)
peers = [r for r in wins if r != 3]
assert peers, "no window of a healthy peer"
for rank, w in wins.items():
    k = [e for e in ev if e.get("pid") == rank and e.get("cat") == "kernel" and e["ph"] == "X"]
    assert k, "no kernel spans of rank %d (window %s)" % (rank, w)
    lo, hi = w["from_unix_ns"] / 1e3, w["to_unix_ns"] / 1e3
    out = [e for e in k if e["ts"] > hi + 1 or e["ts"] + e["dur"] < lo - 1]
    assert not out, "rank %d: %d spans outside [%f, %f]" % (rank, len(out), lo, hi)
    steps = [e for e in ev if e.get("pid") == rank and e["name"].startswith("ProfilerStep#")]
    assert steps, "no ProfilerStep spans of rank %d" % rank
    named = [e for e in k if not e["name"].startswith("0x")]
    assert named, "rank %d: no kernel name resolved" % rank
    print("rank %d: %d kernel spans, %d steps, window %.3f s, error '%s'" %
          (rank, len(k), len(steps), (hi - lo) / 1e6, w["error"]))
PY
curl -sf "127.0.0.1:$HPORT/trace/$ID.json" -o "$T/http.json" || fail "GET /trace/$ID.json"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["traceEvents"]) > 0' "$T/http.json" ||
    fail "/trace/$ID.json is not the trace"
code=$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$HPORT/trace/no-such-report.json")
[[ $code == 404 ]] || fail "/trace/ of an unknown report: HTTP $code, not 404"
ctl trace no-such-report -o "$T/x.json" 2>"$T/err.txt" && fail "argusctl trace of an unknown report succeeded"
grep -q "no report no-such-report" "$T/err.txt" || fail "unclear error: $(cat "$T/err.txt")"
got=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_trace_captures_total{outcome=\"received\"}" {print $2}')
[[ ${got:-0} -ge 2 ]] || fail "argus_trace_captures_total received = ${got:-none}"
ring=$(metric "$APORT_A" argus_agent_span_ring_bytes)
[[ ${ring:-0} -gt 0 ]] || fail "agent span ring bytes = ${ring:-none}"
log "ok: report $ID captured and exported"
