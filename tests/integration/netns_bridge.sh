# Sourced (not a test): a collector namespace with a bridge and NODES node
# namespaces joined to it by veth pairs, each node's end named eth0 at
# $NET.(10 + i)/24, the bridge at $NET.1/24. The caller sets P (a short
# prefix of this run's names: links are at most 15 characters), NSC (the
# collector namespace, already added and in NAMESPACES), NET and NODES; node
# i's namespace is ${P}n$i. netns_cleanup (the EXIT trap) kills what runs in
# them, deletes them and runs lib.sh's cleanup.
netns_cleanup() {
    local p ns
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do # whatever still runs in a namespace of this test
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    wait 2>/dev/null
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
    ip link del "${P}br" 2>/dev/null # in case a step failed before moving it
    cleanup
}
trap netns_cleanup EXIT

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

make_network() {
    local i ns
    ip -n "$NSC" link set lo up
    ip -n "$NSC" link add br0 type bridge || fail "cannot make a bridge"
    ip -n "$NSC" addr add "$NET.1/24" dev br0
    ip -n "$NSC" link set br0 up
    for ((i = 0; i < NODES; i++)); do
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
