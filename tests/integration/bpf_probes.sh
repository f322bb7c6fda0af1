#!/usr/bin/env bash
# Each probe loads and attaches here and sees what tests/bpf/workload did:
# collectives (stand-in libnccl and the real libnccl.so.2; the communicator id
# from ncclCommInitRank's unique id), sync, sched (a
# known sleep within 10%), stacks (a known busy function), marker, net (SYN
# retransmits), io (O_DIRECT writes) and proc (exec/exit of a child).
# test-cpu: all: off-CPU and on-CPU times checked against known sleeps and spins
set -u
cd "$(dirname "$0")/../.."
. tests/bpf/lib.sh
bpf_require_root
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
BPF_FAILED=0
field_total() { sed -n 's/.*total_ns=\([0-9]*\).*/\1/p' "$1"; }

ARGUS_SEEN=$out/drv.out bpf_run collectives "$out" calls
# the communicator id every member shares: FNV-1a of the first 16 bytes of
# the ncclUniqueId the workload gave ncclCommInitRank (7i + 1) and its size 4
comm=$(/usr/bin/python3 -c 'h = 0xcbf29ce484222325
for b in bytes((7 * i + 1) & 255 for i in range(16)) + (4).to_bytes(4, "little"):
    h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
print("0x%x" % h)')
bpf_check "collectives: 3 ncclAllReduce of 4096 bytes, seq 0-2, communicator $comm (not the handle)" \
    "[[ \$(grep -c 'seq=[012] bytes=4096 comm=$comm stream=0x5555' $out/drv.out) == 3 ]]"
bpf_check "collectives: ncclReduce 8th-arg stream decoded" "grep -q 'seq=5 bytes=80 comm=$comm stream=0x5555' $out/drv.out"
bpf_check "collectives: ncclSend/ncclRecv bytes" "grep -q 'seq=6 bytes=256' $out/drv.out && grep -q 'seq=7 bytes=32' $out/drv.out"

# a probed call left by longjmp (an exception unwinding through the library)
# never returns: 5 of them, one more than a thread's calls in flight, then a
# call that returns and must still be matched to its own entry
ARGUS_SEEN=$out/drv.out bpf_run collectives "$out" unwind 5
bpf_check "collectives: 4 unreturned calls dropped, the all-reduce after them recorded" \
    "grep -q 'abandoned_total{probe=\"collectives\"} 4\$' $out/drv.out && grep -q 'unmatched_total{probe=\"collectives\"} 0\$' $out/drv.out &&
     grep -q 'kind=COLLECTIVE.*bytes=64 ' $out/drv.out && ! grep -q 'name=ncclBroadcast' $out/drv.out"

bpf_run sync "$out" calls
sum=$(bpf_counter_sum "$out/drv.out" 3)
want=$(awk '/wait_ns/ {split($3,a,"="); s+=a[2]} END {print s}' "$out/wl.out")
bpf_check "sync: SYNC_WAIT_NS $sum ~ workload $want (nested cuStreamSynchronize counted once)" \
    "(( sum > want * 95 / 100 && sum < want * 105 / 100 ))"
bpf_check "sync: ALLOC_NS seen" "grep -q 'counter=7' $out/drv.out"

if [[ -e /usr/local/cuda/lib64/libnccl.so.2 ]]; then
    bpf_run collectives "$out" realnccl /usr/local/cuda/lib64/libnccl.so.2
    bpf_check "collectives: real libnccl.so.2 ncclAllReduce entry seen" \
        "grep -q 'NAME .*name=ncclAllReduce' $out/drv.out && grep -q 'kind=COLLECTIVE.*bytes=16384' $out/drv.out"
else
    echo "skip part: no /usr/local/cuda/lib64/libnccl.so.2"
fi

# a thread's last stretch is reported at its free, an RCU callback that can
# come long after its process exits: the driver waits for every thread's end
# (the workload's main thread and the ones it started)
BPF_DRIVER_ARGS="--ends 2" bpf_run sched "$out" sleep 400
tid=$(sed -n 's/.*tid=\([0-9]*\).*/\1/p' "$out/wl.out"); slept=$(sed -n 's/.*slept_ns=\([0-9]*\).*/\1/p' "$out/wl.out")
# off-CPU (counter 1) is the wall time less the time on a CPU, so it holds
# the sleep and every wait in the run queue (counter 2), which grows with
# the machine's load. The sleep the thread timed also holds the wait after
# its wakeup: off - runq lies between slept - runq and slept (2% slack).
sleep_ok() { # OFF RUNQ SLEPT
    (($1 >= $3 * 98 / 100 && $1 - $2 <= $3 * 102 / 100 && $1 - $2 >= ($3 - $2) * 98 / 100))
}
off=$(bpf_counter_sum "$out/drv.out" 1 "$tid"); runq=$(bpf_counter_sum "$out/drv.out" 2 "$tid")
bpf_check "sched: off-CPU $off ns (run queue $runq) of thread $tid: its sleep $slept ns and its waits" \
    "sleep_ok $off $runq $slept"

# 40 threads one after the other, each living ~30 ms: most are born and
# gone between two reads of the iterator, so their time comes from their end
BPF_DRIVER_ARGS="--ends 41" bpf_run sched "$out" threads 40
off=0; runq=0; n=0
for t in $(sed -n 's/.*tid=\([0-9]*\).*/\1/p' "$out/wl.out"); do
    off=$((off + $(bpf_counter_sum "$out/drv.out" 1 "$t"))); n=$((n + 1))
    runq=$((runq + $(bpf_counter_sum "$out/drv.out" 2 "$t")))
done
slept=$(awk '/slept_ns/ { split($4,a,"="); s+=a[2] } END { print s }' "$out/wl.out")
ended=$(sed -n 's/.*threads_ended_total{probe="sched"} //p' "$out/drv.out")
bpf_check "sched: $n short threads off-CPU $off ns (run queue $runq): their sleeps $slept ns and their waits, $ended thread ends seen" \
    "(( n == 40 && ended >= 41 )) && sleep_ok $off $runq $slept"

# two threads spinning 400 ms on one CPU wait for it in turn: the run queue
# counted is the kernel's own (each thread's schedstat, as each read it
# just before its exit), plus the waits before each read its own start
BPF_DRIVER_ARGS="--ends 3" bpf_run sched "$out" compete 400
runq=0; kern=0
for t in $(sed -n 's/.*compete tid=\([0-9]*\).*/\1/p' "$out/wl.out"); do
    runq=$((runq + $(bpf_counter_sum "$out/drv.out" 2 "$t")))
done
kern=$(awk '/did compete/ { split($4,a,"="); s+=a[2] } END { print s }' "$out/wl.out")
bpf_check "sched: two threads sharing one CPU waited $runq ns in its run queue (kernel: $kern ns)" \
    "(( kern > 200000000 && runq > kern * 85 / 100 && runq < kern * 110 / 100 ))"

BPF_DRIVER_ARGS="--freq 99" bpf_run stacks "$out" busy 1000
bpf_check "stacks: workload_busy_function in the top frames" "grep -q 'TOP .*name=workload_busy_function' $out/drv.out"

bpf_run marker "$out" marker "$BPF_BUILD/lib/libargus-marker.so" 5
bpf_check "marker: 5 steps from 100" \
    "[[ \$(grep -c 'kind=STEP.*source=2' $out/drv.out) == 5 ]] && grep -q 'number=104' $out/drv.out"
bpf_check "marker: phases named" "grep -q 'name=forward' $out/drv.out && [[ \$(grep -c PHASE_END $out/drv.out) == 10 ]]"

bpf_run net "$out" synretrans
wl=$(sed -n 's/ready pid=//p' "$out/wl.out")
node=$(awk '/counter=5/ && / pid=0 / { split($NF,a,"="); s+=a[2] } END { print s+0 }' "$out/drv.out")
mine=$(awk -v p="pid=$wl" '/counter=5/ && $3==p { split($NF,a,"="); s+=a[2] } END { print s+0 }' "$out/drv.out")
bpf_check "net: SYN retransmits to a full accept queue: node $node, workload $mine (of 3 dropped clients)" \
    "(( node >= 3 && mine >= 3 && mine <= node ))"

ARGUS_IO_FILE=$out/io.data bpf_run io "$out" io 16
wl=$(sed -n 's/ready pid=//p' "$out/wl.out"); took=$(field_total "$out/wl.out")
mine=$(awk -v p="pid=$wl" '/counter=6/ && $3==p { split($NF,a,"="); s+=a[2] } END { print s+0 }' "$out/drv.out")
bpf_check "io: O_DIRECT writes waited $mine ns on the device (workload took $took ns)" \
    "(( mine > 0 && mine <= took ))"

timeout 10 "$BPF_DRIVER" proc --seconds 0.5 >"$out/proc.out" 2>&1 &
drv=$!
for _ in $(seq 50); do grep -q started "$out/proc.out" && break; sleep 0.05; done
/bin/true & tpid=$!; wait $tpid; wait $drv
bpf_check "proc: saw the exec and exit of /bin/true ($tpid)" \
    "grep -q 'kind=PROC_EXEC pid=$tpid ' $out/proc.out && grep -q 'kind=PROC_EXIT pid=$tpid ' $out/proc.out"
exit $BPF_FAILED
