#!/usr/bin/env bash
# make bench-detect: every fault scenario x SEEDS seeds at each of SCALES
# ranks, through the real protocol into the real collector. Per scenario and
# scale: precision and recall of the paged (rank, cause) against the ground
# truth, job-level findings, detection delay from fault onset to the first
# report (steps, and seconds of the run's clock), and the collector's slowest
# diagnosis of one closed step (what a report waits for after its step
# closes). Prints one table.
#   SEEDS=5 SCALES="1024 10240" STEPS=70 tests/bench/detect.sh
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$REPO/build/bin
T=$(mktemp -d /tmp/argus-detect.XXXXXX)
trap 'kill -9 $col 2>/dev/null; rm -rf "$T"' EXIT
SEEDS=${SEEDS:-5}
SCALES=${SCALES:-1024 10240}
STEPS=${STEPS:-70}
SCENARIOS=${SCENARIOS:-healthy compute-straggler link-degraded-group masked-straggler pipeline-stage-straggler jit-stalls data-skew everyone-slower}
port=$((21000 + RANDOM % 9000))
hport=$((port + 1))
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --http.listen "127.0.0.1:$hport" \
    --store.dir "$T/store" --diag.step_timeout 3s >"$T/collector.log" 2>&1 &
col=$!
sleep 0.5
: >"$T/results.jsonl"
for ranks in $SCALES; do
    # keep the offered load near 30k rank-steps/s so sender and collector share 2 cores
    rate=$(/usr/bin/python3 -c "print(max(1.0, min(50.0, 30000.0 / $ranks)))")
    for scn in $SCENARIOS; do
        tp=8; extra=()
        [[ $scn == pipeline-stage-straggler ]] && extra=(--pp 4)
        for seed in $(seq 1 "$SEEDS"); do
            job="$scn-$ranks-$seed"
            "$BIN/argus-sim" --collector "127.0.0.1:$port" --job "$job" --scenario "$scn" \
                --ranks "$ranks" --tp "$tp" --steps "$STEPS" --rate "$rate" --steps_per_batch 2 \
                --seed "$seed" --onset 20 --timeout 600s "${extra[@]}" >"$T/sim.json" \
                || echo "  $job: sim incomplete" >&2
            sleep 3.5 # the step timeout and one tick: the last steps are closed
            "$BIN/argusctl" --collector "127.0.0.1:$port" --json stragglers --job "$job" \
                >"$T/rep.json" 2>/dev/null || echo '{"reports": []}' >"$T/rep.json"
            close=$(curl -s "127.0.0.1:$hport/metrics" | awk '$1 == "argus_diag_step_close_seconds_max" {print $2}')
            /usr/bin/python3 - "$T/sim.json" "$T/rep.json" "$ranks" "$rate" "$close" \
                >>"$T/results.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
run, truth = json.loads(lines[0]), json.loads(lines[-1])
reports = json.load(open(sys.argv[2]))["reports"]
ranks, rate, close = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5] or 0)
NONE = 4294967295
PAGES = {"CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_HOST", "CAUSE_SILENT"}
paged, job, first = set(), set(), None
for r in sorted(reports, key=lambda r: int(r["created_unix_ns"])):
    for s in r["suspects"]:
        if s["rank"] == NONE:
            job.add(s["cause"][6:])
        elif s["cause"] in PAGES and s["level"] != "LEVEL_L1_ITERATION":
            paged.add((s["rank"], s["cause"][6:]))
            if first is None:
                first = r
cause = truth["cause"]
want = set() if cause in ("", "JOB_REGRESSION") else {(c, cause) for c in truth["culprits"]}
hit = len(paged & want)
out = {"scenario": truth["scenario"], "ranks": ranks, "paged": len(paged), "want": len(want),
       "hit": hit, "job": sorted(job), "close_s": close, "complete": run["complete"]}
if first is not None:
    onset_ns = run["start_unix_ns"] + truth["onset"] / rate * 1e9
    out["delay_steps"] = int(first["to_step"]) - truth["onset"]
    out["delay_s"] = (int(first["created_unix_ns"]) - onset_ns) / 1e9
print(json.dumps(out))
PY
        done
    done
done
/usr/bin/python3 - "$T/results.jsonl" "$SEEDS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%-26s %6s %5s %9s %6s %-16s %11s %11s %9s" % ("scenario", "ranks", "runs", "precision",
      "recall", "job findings", "delay steps", "delay s", "close ms"))
groups = {}
for r in rows:
    groups.setdefault((r["scenario"], r["ranks"]), []).append(r)
for (scn, ranks), rs in groups.items():
    paged = sum(r["paged"] for r in rs); want = sum(r["want"] for r in rs); hit = sum(r["hit"] for r in rs)
    prec = hit / paged if paged else (1.0 if not want else 0.0)
    rec = hit / want if want else 1.0
    jobs = sorted({j for r in rs for j in r["job"]})
    ds = [r["delay_steps"] for r in rs if "delay_steps" in r]
    dt = [r["delay_s"] for r in rs if "delay_s" in r]
    closems = max(r["close_s"] for r in rs) * 1e3
    print("%-26s %6d %5d %9.2f %6.2f %-16s %11s %11s %9.1f" % (scn, ranks, len(rs), prec, rec,
          ",".join(jobs) or "-", "%.0f" % (sum(ds) / len(ds)) if ds else "-",
          "%.1f" % (sum(dt) / len(dt)) if dt else "-", closems))
PY
