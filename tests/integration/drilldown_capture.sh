#!/usr/bin/env bash
# Drill-down end to end: two agents replay a real Kineto trace (steps of
# about 0.6 s) at one step per second, as ranks 0-2 and as rank 3 whose
# kernels take 1.5 times as long (replay.stretch: same step numbers and rate,
# as a compute straggler in synchronous training), so diagnosis (default
# settings) flags rank 3 and the collector asks both agents for a window of
# raw spans (Ack.captures -> Batch.traces). Checks: argusctl trace writes
# Chrome-trace JSON that parses, holds kernel spans of rank 3 inside the
# captured window around the flagged steps, spans of a healthy peer, and
# ProfilerStep# spans; /trace/ID.json serves the same; metrics count it.
# test-cpu: idle: agents replaying at 1 step/s until a report pages
. "$(dirname "$0")/lib.sh"
[[ -r $TRACE ]] || skip "no Kineto trace at $TRACE"
command -v curl >/dev/null || skip "no curl"

start_collector "$T/store"
start_agent "$T/spool-a" --replay.trace "$TRACE" --replay.job drill --replay.ranks 3 \
    --replay.world 4 --replay.rate 1
APORT_A=$APORT
APORT=$(free_port)
start_agent "$T/spool-b" --replay.trace "$TRACE" --replay.job drill --replay.ranks 1 \
    --replay.rank_base 3 --replay.world 4 --replay.rate 1 --replay.stretch 1.5 --node.name testnode-b

on_fail() { # what diagnosis saw, for a failure under load to be explained
    ctl jobs
    ctl stragglers --job drill --all | head -n 30
    curl -s "127.0.0.1:$HPORT/metrics" | grep -E '^argus_diag_(closed|late|dropped|budget)' | head
    grep -E ' (warn|error) ' "$T/collector.log" | tail -n 10
    grep -E ' (warn|error) |liveness' "$T/agent.log" | tail -n 15
}

report_id() {
    ctl --json stragglers --job drill >"$T/reports.json" 2>/dev/null || return 1
    /usr/bin/python3 - "$T/reports.json" <<'PY'
import json, sys
reps = json.load(open(sys.argv[1])).get("reports", [])
for r in reps:
    if r.get("pages") and any(s.get("rank", 0) == 3 and s.get("pages") for s in r.get("suspects", [])):
        paged = [s["rank"] for s in r["suspects"] if s.get("pages")]
        print(r["id"], int(r["from_step"]), int(r["to_step"]), ",".join(map(str, paged)))
        sys.exit(0)
sys.exit(1)
PY
}
wait_every "a report that pages rank 3" 240 1 report_id
read -r ID FROM TO PAGED <<<"$(report_id)"
log "report $ID pages rank(s) $PAGED, steps $FROM-$TO"
[[ $PAGED == 3 ]] || fail "report $ID pages ranks $PAGED, not rank 3 alone"

has_windows() {
    ctl trace "$ID" -o "$T/trace.json" >/dev/null 2>&1 || return 1
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["otherData"]["windows"]) >= 2 else 1)' "$T/trace.json"
}
wait_every "two captured windows of report $ID" 120 1 has_windows

/usr/bin/python3 - "$T/trace.json" "$FROM" "$TO" <<'PY' || fail "trace JSON check"
import json, statistics, sys
d = json.load(open(sys.argv[1]))
flag_from, flag_to = int(sys.argv[2]), int(sys.argv[3])
ev = d["traceEvents"]
wins = {w["rank"]: w for w in d["otherData"]["windows"]}
assert 3 in wins, "no window of the flagged rank 3: %s" % list(wins)
peers = [r for r in wins if r != 3]
assert peers, "no window of a healthy peer"
durs = {}
for rank, w in wins.items():
    k = [e for e in ev if e.get("pid") == rank and e.get("cat") == "kernel" and e["ph"] == "X"]
    assert k, "no kernel spans of rank %d (window %s)" % (rank, w)
    lo, hi = w["from_unix_ns"] / 1e3, w["to_unix_ns"] / 1e3
    out = [e for e in k if e["ts"] > hi + 1 or e["ts"] + e["dur"] < lo - 1]
    assert not out, "rank %d: %d spans outside [%f, %f]" % (rank, len(out), lo, hi)
    steps = [int(e["name"][len("ProfilerStep#"):]) for e in ev
             if e.get("pid") == rank and e["name"].startswith("ProfilerStep#")]
    assert steps, "no ProfilerStep spans of rank %d" % rank
    # the window is around the flagged steps: it holds the report's last steps
    # (a tenth of padding may add a neighbour), nothing far from them
    assert any(flag_from <= n <= flag_to for n in steps), \
        "rank %d: steps %s, none of the flagged %d-%d" % (rank, sorted(steps), flag_from, flag_to)
    far = [n for n in steps if n + 2 < flag_from or n > flag_to + 2]
    assert not far, "rank %d: steps %s far from the flagged %d-%d" % (rank, far, flag_from, flag_to)
    # Perfetto names every track; replayed kernels keep their correlation ids
    tracks = {(e["pid"], e["tid"]) for e in ev if e.get("pid") == rank and e["ph"] != "M"}
    named_tracks = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert tracks <= named_tracks, "rank %d: tracks without thread_name: %s" % (rank, tracks - named_tracks)
    assert any(e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == rank for e in ev)
    assert all(e["args"].get("correlation", 0) > 0 and e["args"]["stream"] == e["tid"] for e in k), \
        "rank %d: kernels without stream or correlation args" % rank
    named = [e for e in k if not e["name"].startswith("0x")]
    assert named, "rank %d: no kernel name resolved" % rank
    for e in named:
        durs.setdefault(rank, {}).setdefault(e["name"], []).append(e["dur"])
    print("rank %d: %d kernel spans, steps %d-%d, window %.3f s, error '%s'" %
          (rank, len(k), min(steps), max(steps), (hi - lo) / 1e6, w["error"]))
# the raw spans are the real ones: rank 3's kernels take 1.5 times the peer's
peer = peers[0]
ratios = [statistics.median(durs[3][n]) / statistics.median(durs[peer][n])
          for n in durs[3] if n in durs[peer] and statistics.median(durs[peer][n]) > 0]
assert ratios, "no kernel name common to rank 3 and rank %d" % peer
r = statistics.median(ratios)
print("rank 3 / rank %d kernel duration: median ratio %.2f over %d kernels" % (peer, r, len(ratios)))
assert 1.3 < r < 1.7, "rank 3's kernels are %.2f times rank %d's, not about 1.5" % (r, peer)
PY
curl -sf "127.0.0.1:$HPORT/trace/$ID.json" -o "$T/http.json" || fail "GET /trace/$ID.json"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["traceEvents"]) > 0' "$T/http.json" ||
    fail "/trace/$ID.json is not the trace"
curl -sf "127.0.0.1:$HPORT/job/drill" -o "$T/job.html" || fail "GET /job/drill"
grep -q "href=\"/trace/$ID.json\"" "$T/job.html" || fail "the job page has no link to /trace/$ID.json"
code=$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$HPORT/trace/no-such-report.json")
[[ $code == 404 ]] || fail "/trace/ of an unknown report: HTTP $code, not 404"
ctl trace no-such-report -o "$T/x.json" 2>"$T/err.txt" && fail "argusctl trace of an unknown report succeeded"
grep -q "no report no-such-report" "$T/err.txt" || fail "unclear error: $(cat "$T/err.txt")"
got=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_trace_captures_total{outcome=\"received\"}" {print $2}')
[[ ${got:-0} -ge 2 ]] || fail "argus_trace_captures_total received = ${got:-none}"
ring=$(metric "$APORT_A" argus_agent_span_ring_bytes)
[[ ${ring:-0} -gt 0 ]] || fail "agent span ring bytes = ${ring:-none}"
log "ok: report $ID captured and exported"
