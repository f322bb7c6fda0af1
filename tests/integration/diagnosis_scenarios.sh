#!/usr/bin/env bash
# Every fault scenario at small scale (64 ranks, 100 steps at 25 steps/s,
# onset step 20) through the real protocol into the real collector at its
# default settings, with realistic delivery (argus-sim --delivery realistic:
# batches by age like the agent, per-stream delay and jitter; DELIVERY=lockstep
# for the old lockstep streams): the collector must page exactly the
# scenario's culprits with the scenario's cause (gpu-throttled: GPU_THROTTLED,
# from its records' hw), and nobody for healthy, power-capped (every GPU at its
# power cap: no report at all), jit-stalls, data-skew, imbalance (one rank doing more work: a finding
# naming it, IMBALANCE, for the job's owner) and everyone-slower (which must
# still show up as a job-level finding). silent-rank runs long enough (36 s, in the background
# while the others run) for its rank to be silent by wall clock (diag.silence,
# 30 s) while the job goes on. Each job is checked once none of its steps is
# open (argus_diag_job_open_steps).
source "$(dirname "$0")/lib.sh"

DELIVERY=${DELIVERY:-realistic}
case $DELIVERY in
lockstep) delivery=(--delivery lockstep --steps_per_batch 2) ;;
realistic) delivery=(--delivery realistic) ;;
*) fail "DELIVERY must be realistic or lockstep, not '$DELIVERY'" ;;
esac
start_collector "$T/store"
run() { # scenario tp [extra sim flags]
    local scn=$1 tp=$2; shift 2
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$scn" --scenario "$scn" --ranks 64 \
        --steps 100 --rate 25 --tp "$tp" --seed 7 "${delivery[@]}" "$@" >"$T/$scn.json" \
        || fail "$scn: sim failed: $(cat "$T/$scn.json")"
}
open_steps() { # job: its open steps in /metrics (empty until its first tick)
    curl -s "127.0.0.1:$HPORT/metrics" |
        awk -v l="argus_diag_job_open_steps{job=\"$1\"}" '$1 == l {print $2}'
}
export -f open_steps
export HPORT
check() { # scenario: compare the collector's pages with the ground truth
    local scn=$1
    wait_for "$scn steps to close" 60 bash -c "[[ \$(open_steps $scn) == 0 ]]"
    ctl --json stragglers --job "$scn" >"$T/$scn.rep" || fail "$scn: argusctl stragglers"
    /usr/bin/python3 - "$T/$scn.json" "$T/$scn.rep" <<'PY' || fail "$scn: wrong diagnosis"
import json, sys
truth = json.loads(open(sys.argv[1]).read().splitlines()[-1])
reports = json.load(open(sys.argv[2]))["reports"]
NONE = 4294967295
PAGES = {"CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_HOST", "CAUSE_SILENT", "CAUSE_GPU_THROTTLED"}
paged, job_findings, imbalance = set(), set(), set()
for r in reports:
    for s in r["suspects"]:
        if s["cause"] == "CAUSE_IMBALANCE" and s["level"] != "LEVEL_L1_ITERATION":
            imbalance.add(s["rank"])
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
if truth["scenario"] == "imbalance" and imbalance != set(truth["culprits"]):
    print("  imbalance findings name %s, want %s" % (sorted(imbalance), truth["culprits"]))
    sys.exit(1)
if truth["scenario"] in ("healthy", "power-capped") and reports:
    print("  healthy job got %d reports" % len(reports)); sys.exit(1)
PY
}
run silent-rank 2 --steps 900 & # 36 s at 25 steps/s
silent_pid=$!
for s in healthy compute-straggler masked-straggler jit-stalls data-skew everyone-slower \
    host-straggler imbalance gpu-throttled power-capped; do
    run "$s" 2
done
run link-degraded-group 4
run pipeline-stage-straggler 2 --pp 4
wait "$silent_pid" || fail "silent-rank: sim failed: $(cat "$T/silent-rank.json")"
wait_for "silent-rank's silence finding" 60 bash -c \
    "$BIN/argusctl --collector 127.0.0.1:$CPORT --json stragglers --job silent-rank | grep -q CAUSE_SILENT"
for s in healthy compute-straggler masked-straggler jit-stalls data-skew everyone-slower \
    silent-rank host-straggler imbalance link-degraded-group pipeline-stage-straggler \
    gpu-throttled power-capped; do
    check "$s"
done
echo "all scenarios diagnosed ($DELIVERY delivery)"
