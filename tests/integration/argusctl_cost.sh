#!/usr/bin/env bash
# GPU-hours lost (issue 29), end to end on the real collector fed by the
# simulator: argus-sim's compute straggler (severity 1.6, steps 20-70 of 140)
# and the same job without its fault (same seed: the same noise). The time
# the reports say the straggler cost is within 10% of what it really cost
# (the job's step times, max over ranks, faulty less healthy); argusctl
# cost ranks the culprit's node, COMPUTE and the job first, --json agrees;
# /metrics has argus_job_gpu_seconds_lost_total{cause,job} (GPU-hours x 3600); argusctl report
# and the job page show the cost.
# test-cpu: idle: two simulated 64-rank jobs through one collector, ~1 min
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
for run in fault:compute-straggler healthy:healthy; do
    job="cost-${run%%:*}"
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$job" --scenario "${run#*:}" \
        --ranks 64 --tp 2 --steps 140 --onset 20 --fault_end 70 --severity 1.6 --seed 7 \
        --rate 100 --steps_per_batch 4 >"$T/$job.json" || fail "$job: sim failed: $(cat "$T/$job.json")"
done
metric_of() { curl -s "127.0.0.1:$HPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
export -f metric_of
export HPORT
for job in cost-fault cost-healthy; do
    wait_for "$job's steps diagnosed" 60 bash -c \
        "[[ \$(metric_of 'argus_job_last_step{job=\"$job\"}') -ge 139 ]]"
done

ctl --json stragglers --job cost-fault >"$T/reports.json" || fail "argusctl stragglers failed"
ctl --json steps --job cost-fault --limit 20000 >"$T/fault.steps" || fail "steps (fault) failed"
ctl --json steps --job cost-healthy --limit 20000 >"$T/healthy.steps" || fail "steps failed"
culprit=$(tail -1 "$T/cost-fault.json" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')
/usr/bin/python3 - "$T" "$culprit" <<'PY' >"$T/check.txt" || fail "estimate: $(cat "$T/check.txt")"
import collections, json, sys
T, culprit = sys.argv[1], int(sys.argv[2])
def job_time(name):  # sum over steps of the job's step time (max over ranks)
    t = collections.defaultdict(int)
    for s in json.load(open(f"{T}/{name}.steps"))["steps"]:
        t[int(s["step"])] = max(t[int(s["step"])], int(s["duration_ns"]))
    assert len(t) == 140, len(t)
    return sum(t.values()) / 1e9
actual = job_time("fault") - job_time("healthy")
reports = json.load(open(f"{T}/reports.json"))["reports"]
est = sum(r.get("seconds_lost", 0) for r in reports)
hours = sum(r.get("gpu_hours_lost", 0) for r in reports)
mine = sum(s.get("gpu_hours_lost", 0) for r in reports for s in r["suspects"]
           if s["rank"] == culprit)
print(f"estimated {est:.3f} s ({hours:.4f} GPU-hours), actual {actual:.3f} s, "
      f"error {100 * (est - actual) / actual:+.1f}%")
assert actual > 1, actual
assert abs(est - actual) <= 0.1 * actual, "not within 10%"
assert abs(hours - est * 64 / 3600) <= 0.01 * hours, "GPU-hours are not seconds x 64 ranks"
assert mine >= 0.9 * hours, f"the culprit's share {mine} of {hours}"
open(f"{T}/hours", "w").write(f"{hours}\n")
PY
cat "$T/check.txt"
hours=$(cat "$T/hours")

node=$(ctl --json ranks --job cost-fault | /usr/bin/python3 -c \
    "import json,sys; print([r['node'] for r in json.load(sys.stdin)['ranks'] if r['rank'] == $culprit][0])")
ctl cost >"$T/by-node.txt" || fail "argusctl cost failed"
sed -n 2p "$T/by-node.txt" | grep -Eq "^$node +[0-9.]+ +[0-9]+ +[0-9]" ||
    fail "cost --by node does not rank $node first: $(cat "$T/by-node.txt")"
grep -Eq "^total +[0-9.]+ +[0-9]+ +since 7d" "$T/by-node.txt" || fail "no total: $(cat "$T/by-node.txt")"
ctl cost --by cause --since 1h >"$T/by-cause.txt" || fail "argusctl cost --by cause failed"
sed -n 2p "$T/by-cause.txt" | grep -q "^COMPUTE " || fail "by cause: $(cat "$T/by-cause.txt")"
ctl cost --by job >"$T/by-job.txt" || fail "argusctl cost --by job failed"
sed -n 2p "$T/by-job.txt" | grep -q "^cost-fault " || fail "by job: $(cat "$T/by-job.txt")"
grep -q "cost-healthy" "$T/by-job.txt" && fail "the healthy job cost something: $(cat "$T/by-job.txt")"
ctl --json cost --by job >"$T/cost.json" || fail "argusctl --json cost failed"
/usr/bin/python3 - "$T/cost.json" "$hours" <<'PY' || fail "cost --json: $(cat "$T/cost.json")"
import json, sys
o, hours = json.load(open(sys.argv[1])), float(sys.argv[2])
assert o["by"] == "job" and o["rows"][0]["key"] == "cost-fault", o
assert abs(o["rows"][0]["gpu_hours"] - hours) <= 1e-6 * max(hours, 1), (o, hours)
assert o["rows"][0]["top_reports"], o
PY
ctl cost --by rank >/dev/null 2>"$T/err" && fail "--by rank accepted"
grep -q "not node, cause or job" "$T/err" || fail "--by rank: $(cat "$T/err")"

counter=$(metric_of 'argus_job_gpu_seconds_lost_total{cause="compute",job="cost-fault"}')
/usr/bin/python3 -c "import sys; c, h = float(sys.argv[1]) / 3600, float(sys.argv[2]); \
sys.exit(0 if abs(c - h) <= 0.1 * h else 1)" "${counter:-0}" "$hours" ||
    fail "argus_job_gpu_seconds_lost_total{cause=compute} is '$counter', reports say $hours GPU-hours"
[[ -z $(metric_of 'argus_job_gpu_seconds_lost_total{cause="compute",job="cost-healthy"}') ]] ||
    fail "the healthy job has a cost series"

id=$(/usr/bin/python3 -c "import json,sys; print(max(json.load(open(sys.argv[1]))['reports'], \
key=lambda r: r.get('gpu_hours_lost', 0))['id'])" "$T/reports.json")
ctl report "$id" >"$T/report.txt" || fail "argusctl report failed"
grep -Eq "^  GPU-hours lost [0-9]+(\.[0-9]+)? \([0-9.]+ s of the job's time" "$T/report.txt" ||
    fail "argusctl report shows no cost: $(cat "$T/report.txt")"
curl -sf "127.0.0.1:$HPORT/job/cost-fault" >"$T/job.html" || fail "GET /job/cost-fault failed"
grep -q 'class="cost">GPU-hours lost' "$T/job.html" || fail "the report page shows no cost"
echo "argusctl cost ok"
