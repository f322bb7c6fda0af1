#!/usr/bin/env bash
# Fleet memory (issue 29, collector/fleet/): argusctl nodes and exclude
# against real collectors fed by the simulator. node001 holds rank 10
# (8 ranks per node) of every job below:
#   - compute stragglers at rank 10 in cs-1 (sent to both collectors, as a
#     job's primary and standby), cs-2 and cs-3 (the first collector only)
#     and cs-4 (the second only); one at rank 25 (node003) in other-1;
#   - JIT stalls (findings on nodes that page nobody) and data skew: they
#     must never count.
# The first collector ranks node001 first with 3 distinct jobs and
# node003 with 1; over the set (--collectors) node001 has 4, cs-1
# counted once; --suspect (fleet.suspect_jobs 3) keeps node001 only;
# exclude prints it for srun --exclude= and as a nodeAffinity; /metrics has
# argus_node_culprit_jobs{node="node001"} 3.
# test-cpu: idle: seven simulator jobs through diagnosis
source "$(dirname "$0")/lib.sh"

CPORT2=$(free_port)
HPORT2=$(free_port)
start_collector "$T/store" --fleet.refresh 1s
start_collector_on "$CPORT2" "$HPORT2" "$T/store2" --fleet.refresh 1s
A=127.0.0.1:$CPORT
B=127.0.0.1:$CPORT2

# sim JOB SCENARIO FAULT_RANK COLLECTOR_FLAGS...
sim() {
    local job=$1 scn=$2 rank=$3
    shift 3
    "$BIN/argus-sim" "$@" --job "$job" --scenario "$scn" --fault_rank "$rank" --ranks 32 \
        --ranks_per_node 8 --tp 2 --steps 100 --rate 50 --steps_per_batch 2 --seed $((RANDOM)) \
        >"$T/$job.json" 2>&1 || fail "$job: sim failed: $(tail -5 "$T/$job.json")"
}
sim cs-1 compute-straggler 10 --collector_set "$A,$B"
sim cs-2 compute-straggler 10 --collector "$A"
sim cs-3 compute-straggler 10 --collector "$A"
sim cs-4 compute-straggler 10 --collector "$B"
sim other-1 compute-straggler 25 --collector "$A"
sim jit-1 jit-stalls 10 --collector "$A"
sim skew-1 data-skew 10 --collector "$A"

# jobs_of NODE [argusctl flags]: the node's culprit job count in --json nodes
jobs_of() {
    local node=$1
    shift
    "$BIN/argusctl" "$@" --json nodes | /usr/bin/python3 -c '
import json, sys
nodes = [n for n in json.load(sys.stdin)["nodes"] if n["node"] == sys.argv[1]]
print(nodes[0]["culprit_jobs"] if nodes else 0)' "$node"
}
export -f jobs_of
export BIN A B
wait_for "node001 named by 3 jobs on the first collector" 90 \
    bash -c '[[ $(jobs_of node001 --collector $A) == 3 ]]'
wait_for "node003 named by other-1" 30 bash -c '[[ $(jobs_of node003 --collector $A) == 1 ]]'
wait_for "the set counts cs-1 once: 4 jobs" 60 \
    bash -c '[[ $(jobs_of node001 --collectors $A,$B) == 4 ]]'

# the jobs that must not count did name nodes (or the checks mean nothing):
# JIT stalls as findings on nodes that page nobody, data skew as its cause
names() { "$BIN/argusctl" --collector "$A" --json stragglers --job "$1" | /usr/bin/python3 -c '
import json, sys
skew = sys.argv[1] == "skew"
for r in json.load(sys.stdin).get("reports", []):
    for s in r["suspects"]:
        if (skew and s["cause"] == "CAUSE_DATA_SKEW") or \
                (not skew and s.get("node") and not s.get("pages")):
            sys.exit(0)
sys.exit(1)' "$2"; }
export -f names
wait_for "jit-1's findings on nodes that page nobody" 30 bash -c 'names jit-1 jit'
wait_for "skew-1's data skew finding" 30 bash -c 'names skew-1 skew'

ctl --json nodes >"$T/nodes.json" || fail "argusctl --json nodes failed"
/usr/bin/python3 - "$T/nodes.json" <<'PY' || fail "nodes --json: $(cat "$T/nodes.json")"
import json, sys
out = json.load(open(sys.argv[1]))
nodes = out["nodes"]
assert nodes[0]["node"] == "node001" and nodes[0]["culprit_jobs"] == 3, nodes[0]
assert nodes[0]["suspect"] and out["min_jobs"] == 3, out
jobs = {c["job"] for c in nodes[0]["culprits"]}
assert jobs == {"cs-1", "cs-2", "cs-3"}, jobs
for n in nodes:
    for c in n["culprits"]:
        assert c["job"] not in ("jit-1", "skew-1"), c
        assert c["cause"] in ("compute", "link", "host", "hang", "exited"), c
        assert c["report_id"], c
print("nodes:", [(n["node"], n["culprit_jobs"]) for n in nodes])
PY

ctl nodes >"$T/nodes.txt" || fail "argusctl nodes failed"
grep -Eq '^node001 +3 +yes ' "$T/nodes.txt" || fail "nodes table: $(cat "$T/nodes.txt")"
grep -Eq '^    job cs-2 gpu [0-9-]+ compute, report ' "$T/nodes.txt" ||
    fail "nodes table lists no report: $(cat "$T/nodes.txt")"
ctl nodes --suspect >"$T/suspect.txt" || fail "argusctl nodes --suspect failed"
grep -q '^node001 ' "$T/suspect.txt" || fail "--suspect: $(cat "$T/suspect.txt")"
grep -q '^node003 ' "$T/suspect.txt" && fail "--suspect lists node003: $(cat "$T/suspect.txt")"

[[ $(ctl exclude) == node001 ]] || fail "exclude: '$(ctl exclude)'"
[[ $(ctl exclude --min-jobs 1) == node001,node003 ]] ||
    fail "exclude --min-jobs 1: '$(ctl exclude --min-jobs 1)'"
[[ $(ctl exclude --since 1s --min-jobs 1) == "" ]] ||
    fail "exclude --since 1s: '$(ctl exclude --since 1s --min-jobs 1)'"
ctl exclude --format k8s >"$T/k8s.yaml" || fail "exclude --format k8s failed"
/usr/bin/python3 - "$T/k8s.yaml" <<'PY' || fail "k8s affinity: $(cat "$T/k8s.yaml")"
import sys, yaml
a = yaml.safe_load(open(sys.argv[1]))["affinity"]["nodeAffinity"]
expr = a["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
assert expr == {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node001"]}, expr
PY
ctl exclude --format pbs >/dev/null 2>"$T/bad.txt"
[[ $? == 2 ]] || fail "exclude --format pbs did not exit 2"
grep -q "slurm or k8s" "$T/bad.txt" || fail "no reason for a bad --format: $(cat "$T/bad.txt")"

wait_for "argus_node_culprit_jobs in /metrics" 10 bash -c \
    "curl -s 127.0.0.1:$HPORT/metrics | grep -qx 'argus_node_culprit_jobs{node=\"node001\"} 3'"
[[ $(metric "$HPORT" argus_fleet_suspect_nodes) == 1 ]] ||
    fail "argus_fleet_suspect_nodes: $(metric "$HPORT" argus_fleet_suspect_nodes)"
curl -s "127.0.0.1:$HPORT/metrics" | grep -q 'argus_node_culprit_jobs{node="node00[0245]' &&
    fail "a node that was never a culprit has a score"
echo "fleet nodes ok"
