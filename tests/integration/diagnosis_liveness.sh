#!/usr/bin/env bash
# The liveness scenarios (argus-sim --scenario hang|death|checkpoint: the
# ranks stop at the onset and their agents send RankStatus batches, every
# 5 s while stopped, one per exit) at a CI size (256 ranks, TP 8, 20 steps at
# 10 steps/s) through the real protocol into the real collector, its hang
# bound lowered to 10 s (diag.hang_after) so the test stays short:
#   hang        one report, cause HANG, naming only the stopped rank, within
#               the bound + 30 s of the ranks stopping; the job HUNG; its
#               alert fires listing only that rank; no other page
#   death       one report, cause EXITED, naming the killed rank, within 30 s;
#               the job FAILED; no other page (the others' errors)
#   checkpoint  40 s outside collectives then a clean exit: no report, ENDED
# test-cpu: idle: three simulated 256-rank jobs, timing bounds of 30 s
source "$(dirname "$0")/lib.sh"

start_collector "$T/store" --diag.hang_after 10s
run() { # scenario [extra sim flags]
    local scn=$1; shift
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$scn" --scenario "$scn" --ranks 256 \
        --tp 8 --steps 60 --onset 20 --rate 10 --seed 3 --delivery realistic "$@" \
        >"$T/$scn.json" || fail "$scn: sim failed: $(cat "$T/$scn.json")"
}
run hang --liveness_for 30s &
hang_pid=$!
run death &
death_pid=$!
run checkpoint --liveness_for 40s
wait "$hang_pid" || fail "hang: sim failed"
wait "$death_pid" || fail "death: sim failed"
sleep 3 # a tick: the last statuses are diagnosed
for scn in hang death checkpoint; do
    ctl --json stragglers --job "$scn" >"$T/$scn.rep" || fail "$scn: argusctl stragglers"
done
ctl --json jobs >"$T/jobs.json" || fail "argusctl jobs"
ctl --json alerts >"$T/alerts.json" || fail "argusctl alerts"
/usr/bin/python3 - "$T" <<'PY' || fail "wrong liveness diagnosis: $(tail -20 "$T/collector.log")"
import json, sys
T = sys.argv[1]
jobs = {j["job"]: j for j in json.load(open(T + "/jobs.json")).get("jobs", [])}
alerts = json.load(open(T + "/alerts.json")).get("alerts", [])
bad = 0
for scn, cause, state, target in (("hang", "CAUSE_HANG", "JOB_STATE_HUNG", 10 + 30),
                                  ("death", "CAUSE_EXITED", "JOB_STATE_FAILED", 30),
                                  ("checkpoint", None, "JOB_STATE_ENDED", None)):
    lines = open("%s/%s.json" % (T, scn)).read().splitlines()
    run, truth = json.loads(lines[0]), json.loads(lines[-1])
    reports = json.load(open("%s/%s.rep" % (T, scn)))["reports"]
    pages = [(s["rank"], s["cause"]) for r in reports for s in r["suspects"] if s.get("pages")]
    want = [(c, cause) for c in truth["culprits"]] if cause else []
    stop_ns = run["start_unix_ns"] + truth["onset"] / run["rate"] * 1e9
    named = [int(r["created_unix_ns"]) for r in reports
             if any((s["rank"], s["cause"]) in want for s in r["suspects"])]
    delay = (min(named) - stop_ns) / 1e9 if named else None
    got_state = jobs.get(scn, {}).get("state", "JOB_STATE_UNKNOWN")
    print("%-10s pages %s (want %s), %d reports, named %s s after the stop, state %s: %s" % (
        scn, pages, want, len(reports), "-" if delay is None else "%.1f" % delay, got_state,
        [r["summary"] for r in reports][:2]))
    if sorted(set(pages)) != sorted(want) or got_state != state:
        bad += 1
    if target is not None and (delay is None or delay > target):
        print("  named too late (target %d s)" % target)
        bad += 1
    if scn == "checkpoint" and reports:
        bad += 1
    for a in alerts:
        if a.get("job") == scn and scn == "hang":
            ranks = a.get("ranks", [])
            print("  alert %s %s ranks %s" % (a.get("cause"), a.get("status"), ranks))
            if ranks != truth["culprits"]:
                bad += 1
sys.exit(1 if bad else 0)
PY
curl -s "127.0.0.1:$HPORT/metrics" | grep -q '^argus_diag_jobs{state="failed"} 1' ||
    fail "argus_diag_jobs{state=failed}: $(curl -s "127.0.0.1:$HPORT/metrics" | grep argus_diag_jobs)"
echo "hang, death and checkpoint diagnosed"
