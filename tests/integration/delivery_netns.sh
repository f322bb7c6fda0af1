#!/usr/bin/env bash
# Multi-node over a real (virtual) network: the test makes a collector
# namespace with a bridge (10.77.0.1/24) and 4 node namespaces, each joined to
# the bridge by a veth pair (10.77.0.10-13); one argus-collector (default
# settings) in the first, one argus-agent per node namespace (replaying the
# records of its 8 ranks, argus-sim --record --record_split, at 10 steps/s).
#   healthy    -> zero reports
#   straggler  compute-straggler scenario -> the culprit paged as CAUSE_COMPUTE
#              and nobody else
# Namespaces, links and processes are removed on exit, after a failure too.
# Skips (with the reason) when not root or namespaces cannot be made.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
NODES=4
WORLD=32
RATE=10
NET=10.77.0
P=argn$$ # namespace and link names of this run (links: at most 15 characters)
NSC=${P}c
NAMESPACES=()

((EUID == 0)) || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
ip netns add "$NSC" 2>"$T/netns.err" || skip "ip netns unavailable: $(cat "$T/netns.err")"
NAMESPACES+=("$NSC")

source "$(dirname "$0")/netns_bridge.sh"

# every node namespace reaches the collector's port over its veth and the bridge
check_paths() {
    local i
    for ((i = 0; i < NODES; i++)); do
        wait_every "node $i to reach $NET.1:7700" 20 0.5 \
            in_ns "${P}n$i" bash -c "exec 3<>/dev/tcp/$NET.1/7700"
    done
    in_ns "${P}n0" bash -c "exec 3<>/dev/tcp/127.0.0.1/7700" 2>/dev/null \
        && fail "node 0 reaches the collector on its own loopback: not isolated"
    return 0
}

nsctl() { in_ns "$NSC" "$BIN/argusctl" --collector "$NET.1:7700" "$@"; }

start_ns_collector() {
    ip netns exec "$NSC" "$BIN/argus-collector" --grpc.listen "$NET.1:7700" --grpc.plaintext true --http.listen 127.0.0.1:7702 \
        --store.dir "$T/store" >>"$T/collector.log" 2>&1 &
    PIDS+=($!)
    disown $!
    wait_every "the collector on $NET.1:7700" 20 0.5 nsctl --timeout 1s jobs
}

# run_job JOB SCENARIO: record, start one agent per node namespace, wait for
# step 150 from every rank; sets JOB_PIDS
run_job() {
    local job=$1 i
    "$BIN/argus-sim" --job "$job" --scenario "$2" --ranks $WORLD --ranks_per_node 8 --tp 2 \
        --steps 600 --seed 11 --record "$T/$job.rec" --record_split >"$T/$job.truth" \
        || fail "$job: argus-sim --record: $(cat "$T/$job.truth")"
    JOB_PIDS=()
    for ((i = 0; i < NODES; i++)); do
        ip netns exec "${P}n$i" "$BIN/argus-agent" --collector.address "$NET.1:7700" --grpc.plaintext true \
            --spool.dir "$T/$job.spool$i" --http.listen 127.0.0.1:7701 \
            --node.name "$(printf node%03d "$i")" --node.agent_id "$job-node$i" \
            --cupti.socket "$T/$job.cupti$i.sock" --probes.enable "" \
            --replay.records "$T/$job.rec.node$i" --replay.rate $RATE >>"$T/$job.agent$i.log" 2>&1 &
        PIDS+=($!)
        JOB_PIDS+=($!)
        disown $!
    done
    wait_every "$job: step 150 from every rank" 120 1 all_ranks_at "$job" 150
    sleep 3 # diagnosis of what is stored
}

all_ranks_at() { # JOB STEP
    [[ $(nsctl --json steps --job "$1" --from "$2" --to "$2" --limit 1000 | /usr/bin/python3 -c \
        'import json,sys; print(len(json.load(sys.stdin).get("steps", [])))') == "$WORLD" ]]
}

judge() { # JOB EXPECT [delivery_check.py options]
    local job=$1 e=$2 p; shift 2
    nsctl --json stragglers --job "$job" >"$T/$job.reports" || fail "$job: argusctl stragglers"
    in_ns "$NSC" curl -s 127.0.0.1:7702/metrics >"$T/$job.metrics"
    for p in "${JOB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    /usr/bin/python3 "$HERE/delivery_check.py" "$job" "$T/$job.reports" --expect "$e" \
        --metrics "$T/$job.metrics" "$@" || FAILED+=("$job")
}
FAILED=()

make_network
start_ns_collector
check_paths
run_job healthy healthy
judge healthy none
run_job straggler compute-straggler
judge straggler straggler --truth "$T/straggler.truth"
ranks=$(nsctl ranks --job straggler | awk '$1 ~ /^[0-9]+$/' | wc -l)
log "the collector saw $ranks ranks of 4 nodes over the bridge"
((${#FAILED[@]} == 0)) || fail "wrong diagnosis of: ${FAILED[*]}"
echo "delivery over network namespaces ok"
