#!/usr/bin/env bash
# Every fault scenario at small scale (64 ranks, 100 steps, onset step 20)
# through the real protocol into the real collector: the collector must page
# exactly the scenario's culprits with the scenario's cause, and nobody for
# healthy, jit-stalls, data-skew and everyone-slower (which must still show
# up as a job-level finding).
source "$(dirname "$0")/lib.sh"

start_collector "$T/store" --diag.step_timeout 2s
run() { # scenario tp [extra sim flags]
    local scn=$1 tp=$2; shift 2
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$scn" --scenario "$scn" --ranks 64 \
        --steps 100 --rate 50 --steps_per_batch 2 --tp "$tp" --seed 7 "$@" >"$T/$scn.json" \
        || fail "$scn: sim failed: $(cat "$T/$scn.json")"
}
check() { # scenario: compare the collector's pages with the ground truth
    local scn=$1
    wait_for "$scn steps to close" 10 bash -c \
        "curl -s 127.0.0.1:$HPORT/metrics | grep -q argus_diag_steps_closed_total"
    sleep 2.5   # step timeout + a tick: every step is closed
    ctl --json stragglers --job "$scn" >"$T/$scn.rep" || fail "$scn: argusctl stragglers"
    /usr/bin/python3 - "$T/$scn.json" "$T/$scn.rep" <<'PY' || fail "$scn: wrong diagnosis"
import json, sys
truth = json.loads(open(sys.argv[1]).read().splitlines()[-1])
reports = json.load(open(sys.argv[2]))["reports"]
NONE = 4294967295
PAGES = {"CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_HOST", "CAUSE_SILENT"}
paged, job_findings = set(), set()
for r in reports:
    for s in r["suspects"]:
        if s["rank"] == NONE:
            job_findings.add(s["cause"])
        elif s["cause"] in PAGES and s["level"] != "LEVEL_L1_ITERATION":
            paged.add((s["rank"], s["cause"]))
want_cause = truth["cause"]
if want_cause in ("", "JOB_REGRESSION"):
    want = set()
else:
    want = {(r, "CAUSE_" + want_cause) for r in truth["culprits"]}
hit = len(paged & want)
precision = hit / len(paged) if paged else 1.0
recall = hit / len(want) if want else 1.0
print("%-26s paged %3d, expected %3d, precision %.2f recall %.2f, job findings %s" % (
      truth["scenario"], len(paged), len(want), precision, recall, sorted(job_findings) or "-"))
if precision < 1 or recall < 1:
    print("  paged:", sorted(paged)[:10], " expected:", sorted(want)[:10])
    sys.exit(1)
if want_cause == "JOB_REGRESSION" and "CAUSE_JOB_REGRESSION" not in job_findings:
    print("  no job regression finding"); sys.exit(1)
if truth["scenario"] == "healthy" and reports:
    print("  healthy job got %d reports" % len(reports)); sys.exit(1)
PY
}
for s in healthy compute-straggler masked-straggler jit-stalls data-skew everyone-slower \
    silent-rank host-straggler; do
    run "$s" 2
done
run link-degraded-group 4
run pipeline-stage-straggler 2 --pp 4
for s in healthy compute-straggler masked-straggler jit-stalls data-skew everyone-slower \
    silent-rank host-straggler link-degraded-group pipeline-stage-straggler; do
    check "$s"
done
echo "all scenarios diagnosed"
