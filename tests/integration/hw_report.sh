#!/usr/bin/env bash
# Hardware evidence on the culprit's report (issue 29), with real agents in
# network namespaces (a collector namespace with a bridge, 4 node
# namespaces joined to it by veth pairs, as delivery_netns.sh) reading the
# NVML test double (build/tests/libnvml-double.so, scripted per node) and
# their namespace's own NIC counters. Each job is a compute-straggler
# recorded without hardware counters (argus-sim --hw false), so what the
# report says of the hardware is what the agents read:
#   throttled  the culprit's GPU (in its node's NVML script) at HW thermal
#              slowdown, 1,410 MHz, 91 C; the others at 1,980 MHz: the
#              culprit is paged as GPU_THROTTLED with those numbers, nobody
#              else is paged
#   nic        the GPUs healthy; a second NIC of the culprit's node (eth1,
#              a veth pair to a sink namespace) drops packets at its root qdisc (tc netem loss 20%, or a
#              64 kbit/s token bucket where the kernel has no netem) under a
#              UDP flood: the culprit is paged as COMPUTE and its evidence
#              cites its node's NIC drops against its peers'
# Every rank's stored records carry hw (SM clock from the double).
# Skips (with the reason) when not root, without namespaces or tc.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
NODES=4
WORLD=32
RATE=10
NET=10.78.0
P=arhw$$ # namespace and link names of this run (links: at most 15 characters)
NSC=${P}c
NAMESPACES=()
DOUBLE=$BIN/../tests/libnvml-double.so

((EUID == 0)) || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v tc >/dev/null || skip "no tc command (iproute2)"
[[ -f $DOUBLE ]] || fail "no NVML double at $DOUBLE (make builds it)"
ip netns add "$NSC" 2>"$T/netns.err" || skip "ip netns unavailable: $(cat "$T/netns.err")"
NAMESPACES+=("$NSC")

source "$(dirname "$0")/netns_bridge.sh"

nsctl() { in_ns "$NSC" "$BIN/argusctl" --collector "$NET.1:7700" --grpc.plaintext "$@"; }

start_ns_collector() {
    in_ns "$NSC" "$BIN/argus-collector" --grpc.listen "$NET.1:7700" --grpc.plaintext true \
        --http.listen 127.0.0.1:7702 --store.dir "$T/store" >>"$T/collector.log" 2>&1 &
    PIDS+=($!)
    disown $!
    wait_every "the collector on $NET.1:7700" 20 0.5 nsctl --timeout 1s jobs
}

# nvml_script FILE [GPU]: 8 healthy GPUs; GPU (when given) at HW thermal
# slowdown
nvml_script() {
    {
        echo "gpus 8"
        if [[ -n ${2:-} ]]; then
            echo "gpu $2 reasons 0x40"
            echo "gpu $2 sm_clock 1410"
            echo "gpu $2 temperature 91"
            echo "gpu $2 thermal_violation_ms_per_s 800"
        fi
    } >"$1"
}

# culprit JOB: the truth's culprit rank
culprit() {
    /usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["culprits"][0])' "$T/$1.truth"
}

# run_job JOB FAULT: record a compute-straggler, fault its culprit's node
# (throttled: its GPU in the NVML script; nic: drops on a second NIC under a
# flood), one agent per node namespace; waits for step 150
run_job() {
    local job=$1 fault=$2 i c node gpu
    "$BIN/argus-sim" --job "$job" --scenario compute-straggler --ranks $WORLD --ranks_per_node 8 \
        --tp 2 --steps 600 --seed 11 --hw false --record "$T/$job.rec" --record_split \
        >"$T/$job.truth" || fail "$job: argus-sim --record: $(cat "$T/$job.truth")"
    c=$(culprit "$job") node=$((c / 8)) gpu=$((c % 8))
    echo "$node" >"$T/$job.node"
    log "$job: culprit rank $c on node $node, GPU $gpu"
    for ((i = 0; i < NODES; i++)); do
        if [[ $fault == throttled && $i == "$node" ]]; then
            nvml_script "$T/$job.nvml$i" "$gpu"
        else
            nvml_script "$T/$job.nvml$i"
        fi
    done
    if [[ $fault == nic ]]; then
        # a second NIC of the node (eth1, a veth to a sink namespace) drops
        # at its root qdisc under a UDP flood: netem where the kernel has
        # it, else a token bucket the flood overfills; eth0 (the agent's
        # link to the collector) stays clean
        ip netns add "${P}s" || fail "ip netns add ${P}s"
        NAMESPACES+=("${P}s")
        ip link add "${P}x" type veth peer name "${P}y" || fail "cannot make the sink veth pair"
        ip link set "${P}x" netns "${P}n$node"
        ip link set "${P}y" netns "${P}s"
        in_ns "${P}n$node" ip link set "${P}x" name eth1
        in_ns "${P}n$node" ip addr add 10.79.0.1/24 dev eth1
        in_ns "${P}n$node" ip link set eth1 up
        ip -n "${P}s" addr add 10.79.0.2/24 dev "${P}y"
        ip -n "${P}s" link set "${P}y" up
        if in_ns "${P}n$node" tc qdisc add dev eth1 root netem loss 20% 2>/dev/null; then
            log "$job: node $node's eth1 drops 20% (netem)"
        else
            in_ns "${P}n$node" tc qdisc add dev eth1 root tbf rate 64kbit burst 2kb latency 5ms \
                || fail "tc: neither netem nor tbf"
            log "$job: node $node's eth1 at 64 kbit/s under a UDP flood (no netem in this kernel)"
        fi
        ip netns exec "${P}n$node" /usr/bin/python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
while True:  # about 500 datagrams a second: far past the bucket, light on the CPU
    for _ in range(10):
        try:
            s.sendto(bytes(1000), ("10.79.0.2", 9))
        except OSError:
            pass
    time.sleep(0.02)' >/dev/null 2>&1 &
        PIDS+=($!)
        disown $!
    fi
    JOB_PIDS=()
    for ((i = 0; i < NODES; i++)); do
        # ip netns exec itself (not in_ns: a function in the background is a
        # subshell whose death would leave the agent running)
        ip netns exec "${P}n$i" env ARGUS_NVML_DOUBLE="$T/$job.nvml$i" "$BIN/argus-agent" \
            --collector.address "$NET.1:7700" --grpc.plaintext true \
            --spool.dir "$T/$job.spool$i" --http.listen 127.0.0.1:7701 \
            --node.name "$(printf node%03d "$i")" --node.agent_id "$job-node$i" \
            --cupti.socket "$T/$job.cupti$i.sock" --probes.enable "" \
            --hw.nvml_lib "$DOUBLE" --hw.interval 50ms \
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

# check JOB FAULT: the culprit alone pages, with the cause and the
# hardware sentence the fault calls for; every rank's records carry hw
check() {
    local job=$1 fault=$2 p
    nsctl --json stragglers --job "$job" >"$T/$job.reports" || fail "$job: argusctl stragglers"
    nsctl --json steps --job "$job" --from 100 --to 100 --limit 1000 >"$T/$job.steps"
    for p in "${JOB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for p in "${JOB_PIDS[@]}"; do # gone before the next job's agents take their ports
        wait_every "$job: agent $p to end" 20 0.2 bash -c "! kill -0 $p 2>/dev/null"
    done
    /usr/bin/python3 - "$job" "$fault" "$(culprit "$job")" "$T/$job.reports" "$T/$job.steps" <<'PY' || fail "$job: see above"
import json, sys
job, fault, culprit = sys.argv[1], sys.argv[2], int(sys.argv[3])
reports = json.load(open(sys.argv[4])).get("reports", [])
steps = json.load(open(sys.argv[5])).get("steps", [])
hw = [s for s in steps if s.get("hw")]
assert len(hw) == len(steps) == 32, "records with hw: %d of %d" % (len(hw), len(steps))
clocks = sorted(int(s["hw"].get("sm_clock_mhz", 0)) for s in hw)
assert clocks[len(clocks) // 2] == 1980, "median SM clock %s" % clocks
paging = [(int(s["rank"]), s["cause"], s.get("evidence", "")) for r in reports
          for s in r.get("suspects", []) if s.get("pages")]
assert paging, "nobody paged"
ranks = {r for r, _, _ in paging}
assert ranks == {culprit}, "paged %s, culprit %d" % (sorted(ranks), culprit)
want = "CAUSE_GPU_THROTTLED" if fault == "throttled" else "CAUSE_COMPUTE"
causes = {c for _, c, _ in paging}
assert causes == {want}, "causes %s, want %s" % (causes, want)
ev = paging[-1][2]
if fault == "throttled":
    for words in ("thermal", "1,410", "1,980", "91"):
        assert words in ev, "no '%s' in: %s" % (words, ev)
else:
    assert "NIC" in ev and "drops" in ev, "no NIC drops in: %s" % ev
print("%s: rank %d paged as %s: %s" % (job, culprit, want, ev))
PY
}

make_network
start_ns_collector
run_job throttled throttled
check throttled throttled
run_job nic nic
check nic nic
echo "hardware evidence ok"
