#!/usr/bin/env bash
# One job id across nodes for a per-node spawner: two network namespaces are
# two nodes (nodeA 10.78.0.10, nodeB 10.78.0.11, joined by a bridge in a
# third namespace that holds the collector at 10.78.0.1), with one
# argus-agent each (default probes, discovery.netns = own: each tracks only
# its namespace's processes). A 4-rank gloo DDP job (Debian python3-torch,
# CPU) is spawned 2+2: on each node one parent process with no rendezvous
# variable at exec runs torch.multiprocessing.spawn of 2 children, which set
# RANK (node_rank * 2 + local), WORLD_SIZE=4, MASTER_ADDR=nodeA's address and
# MASTER_PORT in their own os.environ and call init_process_group("gloo")
# (tests/bpf/torch_ddp_steps_job.py, NODE_RANK/NPROC_PER_NODE). The job's
# name comes from the store its process group uses (c10d::TCPStore at
# nodeA:PORT), the same on both nodes. Checks: the collector has exactly one
# job, torch-10.78.0.10:PORT, with all 4 ranks, 0-1 on nodeA and 2-3 on
# nodeB, and steps stored for all 4 with the same step numbers; each agent
# left the other node's processes alone.
# Namespaces, links and processes are removed on exit, after a failure too.
# Skips (with the reason) when not root or namespaces cannot be made.
# test-cpu: all: a real PyTorch job, 4 ranks and two agents on all cores
source "$(dirname "$0")/lib.sh"
NET=10.78.0
P=argt$$ # namespace and link names of this run (links: at most 15 characters)
NSC=${P}c
NAMESPACES=()
STEPS=120

((EUID == 0)) || skip "network namespaces and BPF need root"
[[ -r /sys/kernel/btf/vmlinux ]] || skip "no BTF"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v nsenter >/dev/null || skip "no nsenter (util-linux)"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "no python3-torch"
ip netns add "$NSC" 2>"$T/netns.err" || skip "ip netns unavailable: $(cat "$T/netns.err")"
NAMESPACES+=("$NSC")

netns_cleanup() {
    local p ns
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do # whatever still runs in a namespace of this test
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    wait 2>/dev/null
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
    cleanup
}
trap netns_cleanup EXIT

# in_ns NS CMD...: CMD in NS's network namespace only (ip netns exec would
# also remount /sys, hiding the tracing and BPF file systems from an agent)
in_ns() {
    local ns=$1
    shift
    nsenter --net="/run/netns/$ns" "$@"
}

# node i: namespace ${P}n$i, eth0 at $NET.(10+i), a veth to the bridge
make_network() {
    local i ns
    ip -n "$NSC" link set lo up
    ip -n "$NSC" link add br0 type bridge || fail "cannot make a bridge"
    ip -n "$NSC" addr add "$NET.1/24" dev br0
    ip -n "$NSC" link set br0 up
    for i in 0 1; do
        ns=${P}n$i
        ip netns add "$ns" || fail "ip netns add $ns"
        NAMESPACES+=("$ns")
        ip link add "${P}h$i" type veth peer name "${P}p$i" || fail "cannot make veth pair $i"
        ip link set "${P}h$i" netns "$NSC"
        ip link set "${P}p$i" netns "$ns"
        ip -n "$NSC" link set "${P}h$i" master br0 up
        ip -n "$ns" link set "${P}p$i" name eth0
        ip -n "$ns" addr add "$NET.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done
}

nsctl() { in_ns "$NSC" "$BIN/argusctl" --collector "$NET.1:7700" "$@"; }

start_ns_collector() {
    in_ns "$NSC" "$BIN/argus-collector" --grpc.listen "$NET.1:7700" --grpc.plaintext true \
        --http.listen 127.0.0.1:7702 --store.dir "$T/store" >>"$T/collector.log" 2>&1 &
    PIDS+=($!)
    disown $!
    wait_every "the collector on $NET.1:7700" 20 0.5 nsctl --timeout 1s jobs
}

# start_node_agent I NAME: the agent of node namespace I, default probes
start_node_agent() {
    local i=$1 name=$2 probes
    probes=$("$BIN/argus-agent" --print-config |
        awk '/^\[/ {sec=$0} sec == "[probes]" && $1 == "enable" {gsub(/"/, "", $3); print $3}')
    in_ns "${P}n$i" "$BIN/argus-agent" --collector.address "$NET.1:7700" --grpc.plaintext true \
        --spool.dir "$T/spool$i" --http.listen 127.0.0.1:7701 --node.name "$name" \
        --cupti.socket "$T/cupti$i.sock" --probes.enable "$probes" --discovery.netns own \
        --discovery.scan_interval 200ms --batch.max_age 200ms >>"$T/agent$i.log" 2>&1 &
    PIDS+=($!)
    disown $!
    wait_every "agent of $name" 20 0.5 in_ns "${P}n$i" curl -sf 127.0.0.1:7701/healthz
}

node_metric() { # I NAME
    in_ns "${P}n$1" curl -s 127.0.0.1:7701/metrics | awk -v m="$2" '$1 == m {print $2}'
}

# run_job PORT: the spawn parent of each node, to the job's end
run_job() {
    local port=$1 i pids=()
    mkdir -p "$T/log"
    for i in 0 1; do
        in_ns "${P}n$i" env -u MASTER_ADDR -u MASTER_PORT -u WORLD_SIZE -u RANK -u ARGUS_JOB \
            NODE_RANK=$i NPROC_PER_NODE=2 WORLD=4 SPAWN_ADDR=$NET.10 SPAWN_PORT="$port" \
            GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 STEPS_LOG_DIR="$T/log" STEPS=$STEPS \
            WIDTH=256 /usr/bin/python3 "$REPO/tests/bpf/torch_ddp_steps_job.py" \
            >"$T/job$i.out" 2>&1 &
        pids+=($!)
        PIDS+=($!)
    done
    for i in 0 1; do
        wait "${pids[$i]}" || fail "node $i's spawn failed: $(tail -5 "$T/job$i.out")"
    done
    log "job done: $(wc -l <"$T/log/rank.0") steps on rank 0"
}

make_network
start_ns_collector
start_node_agent 0 nodeA
start_node_agent 1 nodeB
port=$((20000 + RANDOM % 10000))
run_job "$port"
job="torch-$NET.10:$port"
wait_every "4 ranks of $job at the collector" 30 0.5 bash -c \
    "[[ \$(nsenter --net=/run/netns/$NSC $BIN/argusctl --collector $NET.1:7700 ranks --job $job | awk 'NR > 1' | wc -l) == 4 ]]"
nsctl jobs | tee "$T/jobs.txt"
[[ $(awk 'NR > 1' "$T/jobs.txt" | wc -l) == 1 ]] || fail "not exactly one job at the collector"
nsctl ranks --job "$job" | tee "$T/ranks.txt"
for r in 0 1 2 3; do
    node=nodeA
    ((r >= 2)) && node=nodeB
    pid=$(cat "$T/log/pid.$r")
    awk -v r="$r" -v n="$node" -v p="$pid" '$1 == r && $3 == 4 && $4 == n && $6 == p' \
        "$T/ranks.txt" | grep -q . || fail "rank $r (pid $pid) is not rank $r of 4 on $node"
done
for i in 0 1; do
    grep -q "of job $job (from communicator, job from TCPStore)" "$T/agent$i.log" ||
        fail "node $i: the job did not come from the store: $(grep 'is rank' "$T/agent$i.log")"
    [[ $(node_metric "$i" argus_agent_discovery_other_netns_total) -gt 0 ]] ||
        fail "node $i's agent saw no process of another namespace"
done
# the steps of the 4 ranks: at least 90% of the job's under one numbering
# (the same step numbers on both nodes)
want=$((STEPS * 9 / 10))
steps_agree() {
    nsctl --json steps --job "$job" --limit 100000 >"$T/steps.json" || return 1
    /usr/bin/python3 - "$T/steps.json" "$want" <<'PY'
import json, sys
per = {}
for s in json.load(open(sys.argv[1]))["steps"]:
    per.setdefault(s["rank"], set()).add(int(s["step"]))
common = set.intersection(*per.values()) if per else set()
for r in sorted(per):
    print("rank %d: %d steps, %d..%d" % (r, len(per[r]), min(per[r]), max(per[r])))
print("%d step numbers common to all ranks" % len(common))
sys.exit(not (sorted(per) == [0, 1, 2, 3] and len(common) >= int(sys.argv[2])))
PY
}
wait_every "$want steps of every rank under one numbering" 30 1 steps_agree
steps_agree
echo "one job across two nodes ok"
