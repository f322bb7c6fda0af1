#!/usr/bin/env bash
# agent/hw/nic on a real (virtual) network: two network namespaces joined by
# a veth pair (10.78.0.1 in A, 10.78.0.2 in B; IPv6 off and the neighbours
# permanent, so nothing but the test's UDP packets crosses), and
# tests/nic/nic-read sampling in A every 100 ms (`ip netns exec` mounts A's
# own /sys: it sees A's interface only) while A sends to B:
#   no fault     2000 packets: no error, drop or carrier loss counted
#   qdisc drops  `tc netem loss 30%` (a tbf of 1 Mbit/s where the kernel has
#                no netem) as vetha's root qdisc, 2000 packets: the drops
#                grow by at least the qdisc's own count (tc -s), by at least
#                15% (netem) or half (tbf) of the packets and by no more than
#                were sent; the qdisc removed (its counter back to 0), the
#                drops stay
#   peer down    vethb set down while A floods: at least one carrier loss
#                and one drop (veth drops what goes to a down peer), then up
# Namespaces (their links with them) and processes are removed on exit,
# after a failure too. Skips (with the reason) when not root or without ip,
# tc or namespaces.
source "$(dirname "$0")/lib.sh"
READ=${ARGUS_BUILD:-$REPO/build}/tests/nic/nic-read
P=argnic$$ # namespace names of this run
NSA=${P}a
NSB=${P}b
NAMESPACES=()
PACKETS=2000

((EUID == 0)) || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v tc >/dev/null || skip "no tc command (iproute2)"
[[ -x $READ ]] || fail "no $READ (make)"
ip netns add "$NSA" 2>"$T/netns.err" || skip "ip netns unavailable: $(cat "$T/netns.err")"
NAMESPACES+=("$NSA")

netns_cleanup() {
    local p ns
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    wait 2>/dev/null
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
    cleanup
}
trap netns_cleanup EXIT

in_a() { ip netns exec "$NSA" "$@"; }

make_network() {
    local ns
    ip netns add "$NSB" || fail "ip netns add $NSB"
    NAMESPACES+=("$NSB")
    for ns in "$NSA" "$NSB"; do
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
            net.ipv6.conf.default.disable_ipv6=1 || fail "cannot turn IPv6 off in $ns"
        ip -n "$ns" link set lo up
    done
    ip -n "$NSA" link add vetha type veth peer name vethb netns "$NSB" || fail "cannot make a veth pair"
    ip -n "$NSA" addr add 10.78.0.1/24 dev vetha
    ip -n "$NSB" addr add 10.78.0.2/24 dev vethb
    ip -n "$NSA" link set vetha up
    ip -n "$NSB" link set vethb up
    ip -n "$NSA" neigh replace 10.78.0.2 lladdr "$(mac "$NSB" vethb)" dev vetha nud permanent
    ip -n "$NSB" neigh replace 10.78.0.1 lladdr "$(mac "$NSA" vetha)" dev vethb nud permanent
    wait_for "vetha's carrier" 10 link_up
}

mac() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }
link_up() { [[ $(in_a cat /sys/class/net/vetha/carrier 2>/dev/null) == 1 ]]; }
link_down() { ! link_up; }

# send COUNT: COUNT UDP datagrams from A to B's discard port, as fast as
# they go (an unconnected socket: B's ICMP answers raise no error)
send() {
    in_a /usr/bin/python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[1])):
    try:
        s.sendto(b"x" * 100, ("10.78.0.2", 9))
    except OSError:
        pass' "$1"
}

# flood SECONDS: send as fast as they go for SECONDS (failed sends ignored)
flood() {
    in_a /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        s.sendto(b"x" * 100, ("10.78.0.2", 9))
    except OSError:
        pass' "$1"
}

# start_reader NAME: nic-read in A into $T/NAME.jsonl, after its first
# sample (the baseline: totals 0); sets READER
start_reader() {
    in_a "$READ" --interval-ms 100 >"$T/$1.jsonl" 2>"$T/$1.err" &
    READER=$!
    PIDS+=("$READER")
    wait_for "nic-read's first sample" 10 test -s "$T/$1.jsonl"
}

# latest NAME KEY: KEY of the reader's latest sample, after two more
latest() {
    sleep 0.25
    tail -n 1 "$T/$1.jsonl" >"$T/$1.last"
    json_get "$T/$1.last" "$2"
}

stop_reader() {
    kill "$READER" 2>/dev/null
    wait "$READER" 2>/dev/null
    [[ -s $T/$1.err ]] && fail "$1: nic-read: $(cat "$T/$1.err")"
    return 0
}

# root_qdisc_drops: the "dropped" of vetha's root qdisc (tc -s)
root_qdisc_drops() {
    in_a tc -s qdisc show dev vetha | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -n 1
}

no_fault() {
    local k v
    start_reader calm
    send $PACKETS
    [[ $(latest calm nics) == 1 ]] || fail "no fault: nics $(cat "$T/calm.last"), want vetha alone"
    for k in errors drops link_downs; do
        v=$(latest calm $k)
        [[ $v == 0 ]] || fail "no fault: $k grew by $v ($(cat "$T/calm.last"))"
    done
    stop_reader calm
    log "no fault: $PACKETS packets, nothing counted"
}

# add_fault: netem loss 30% as vetha's root qdisc, or a tbf; sets MIN_SHARE
# (per cent of the packets that at least must be dropped)
add_fault() {
    if in_a tc qdisc add dev vetha root netem loss 30% 2>"$T/netem.err"; then
        MIN_SHARE=15 FAULT="netem loss 30%"
        return
    fi
    grep -qi "unknown" "$T/netem.err" || fail "tc netem: $(cat "$T/netem.err")"
    in_a tc qdisc add dev vetha root tbf rate 1mbit burst 1600 limit 3000 ||
        fail "no netem (kernel without sch_netem) and no tbf either"
    MIN_SHARE=50 FAULT="tbf 1mbit (this kernel has no netem)"
}

qdisc_drops() {
    local drops tc_drops after
    add_fault
    start_reader lossy
    send $PACKETS
    drops=$(latest lossy drops)
    tc_drops=$(root_qdisc_drops)
    log "$FAULT: $PACKETS packets sent, nic drops $drops, the qdisc's $tc_drops"
    ((tc_drops > 0)) || fail "$FAULT dropped nothing: $(in_a tc -s qdisc show dev vetha)"
    ((drops >= tc_drops)) || fail "$FAULT: drops $drops, fewer than the qdisc's $tc_drops"
    ((drops * 100 >= PACKETS * MIN_SHARE)) || fail "$FAULT: drops $drops, under $MIN_SHARE% of $PACKETS"
    ((drops <= PACKETS)) || fail "$FAULT: drops $drops, more than the $PACKETS packets sent"
    [[ $(json_get "$T/lossy.last" errors) == 0 ]] || fail "$FAULT: errors counted ($(cat "$T/lossy.last"))"
    in_a tc qdisc del dev vetha root || fail "cannot remove the $FAULT qdisc"
    after=$(latest lossy drops)
    ((after == drops)) || fail "the qdisc removed (its counter back to 0): drops $drops -> $after"
    stop_reader lossy
}

peer_down() {
    local drops downs sender
    start_reader down
    flood 2.5 &
    sender=$!
    PIDS+=("$sender")
    sleep 0.5
    ip -n "$NSB" link set vethb down || fail "cannot set vethb down"
    wait_for "vetha's carrier loss" 10 link_down
    sleep 0.5
    ip -n "$NSB" link set vethb up || fail "cannot set vethb up"
    wait_for "vetha's carrier back" 10 link_up
    wait "$sender"
    drops=$(latest down drops)
    downs=$(latest down link_downs)
    log "peer down while flooding: link_downs $downs, drops $drops"
    ((downs >= 1)) || fail "peer down: no carrier loss counted ($(cat "$T/down.last"))"
    ((drops >= 1)) || fail "peer down: no drop counted ($(cat "$T/down.last"))"
    stop_reader down
}

make_network
no_fault
qdisc_drops
peer_down
echo "NIC counters over network namespaces ok"
