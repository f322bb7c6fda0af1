#!/usr/bin/env bash
# Agent cost: 8 local ranks at 10 steps/s (the Kineto trace replayed: 577 real
# kernel events per step through the KDE summarizer, batcher, spool and
# exporter) into a real collector for DURATION seconds. Prints the agent's CPU
# (share of one core, per 1,000 step records shipped, per MB through the
# spool) and peak RSS once the span ring is full (the steady state). Target:
# under 1% of one core and under 64 MiB.
#
# MODE=trace (default): the replayed trace; MODE=records: step records
# already summarised (argus-sim --record), i.e. shipping only; MODE=probes
# (root): 8 real processes of the test workload (tests/bpf/workload train:
# compute, 6 ncclAllReduce into a stand-in libnccl, a 98 ms fake sync,
# argus_step) found by discovery and traced by every default eBPF probe.
# STANDBY=1: a second collector and collector.set of the two, so every batch
# goes to the job's primary and its standby (issue 28); the bytes the
# collectors received are printed either way.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$REPO/build/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the demo's collector is plaintext on loopback
TRACE=${ARGUS_TRACE:-$REPO/../shared/data/kineto/trace_filter__sampled_rank-0.json.gz}
[[ -f $TRACE ]] || { echo "skip: no Kineto trace at $TRACE"; exit 0; }
T=$(mktemp -d /tmp/argus-bench-agent.XXXXXX)
port=$((22000 + RANDOM % 9000))
ranks=()
col2=""
trap 'kill -9 $col $col2 $agent "${ranks[@]}" 2>/dev/null; rm -rf "$T"' EXIT
DURATION=${DURATION:-30}
# the ranks' work: the Kineto trace through the summarizer (trace), or step
# records already summarised, as argus-sim makes them (records)
MODE=${MODE:-trace}
probes=(--probes.enable "")
if [[ $MODE == probes ]]; then
    WL=$REPO/build/tests/bpf/workload
    [[ $(id -u) == 0 && -r /sys/kernel/btf/vmlinux ]] || { echo "skip: MODE=probes needs root and BTF"; exit 0; }
    [[ -x $WL ]] || { echo "skip: $WL not built"; exit 0; }
    mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
    probes=() # the defaults
    src=()
    for r in $(seq 0 7); do
        ARGUS_GO=$T/go RANK=$r LOCAL_RANK=$r WORLD_SIZE=8 ARGUS_JOB=bench FAKE_SYNC_US=98000 \
            ARGUS_MARKER_LIB=$REPO/build/lib/libargus-marker.so "$WL" train $((DURATION * 10 + 150)) \
            >"$T/rank.$r" 2>&1 &
        ranks+=($!)
    done
elif [[ $MODE == records ]]; then
    "$BIN/argus-sim" --job bench --ranks 8 --steps $((DURATION * 10 + 100)) --record "$T/rec.bin" >/dev/null
    src=(--replay.records "$T/rec.bin" --replay.rate 10)
else
    src=(--replay.trace "$TRACE" --replay.ranks 8 --replay.rate 10)
fi
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --grpc.plaintext true \
    --http.listen "127.0.0.1:$((port + 2))" --store.dir "$T/store" >"$T/collector.log" 2>&1 &
col=$!
dest=(--collector.address "127.0.0.1:$port")
if [[ ${STANDBY:-0} == 1 ]]; then
    "$BIN/argus-collector" --grpc.listen "127.0.0.1:$((port + 3))" --grpc.plaintext true \
        --http.listen "127.0.0.1:$((port + 4))" --store.dir "$T/store2" >"$T/collector2.log" 2>&1 &
    col2=$!
    dest=(--collector.set "127.0.0.1:$port,127.0.0.1:$((port + 3))")
fi
for p in $((port + 2)) $([[ -n $col2 ]] && echo $((port + 4))); do
    for _ in $(seq 50); do curl -sf "127.0.0.1:$p/metrics" >/dev/null && break; sleep 0.1; done
    curl -sf "127.0.0.1:$p/metrics" >/dev/null || { echo "error: the collector on :$p did not start"; exit 1; }
done
"${ARGUS_AGENT:-$BIN/argus-agent}" "${dest[@]}" --grpc.plaintext true --spool.dir "$T/spool" \
    --http.listen "127.0.0.1:$((port + 1))" --cupti.socket "$T/cupti.sock" "${probes[@]}" \
    "${src[@]}" >"$T/agent.log" 2>&1 &
agent=$!
sleep 3 # start-up (trace parsing, probe loading) is not what is measured
if [[ $MODE == probes ]]; then
    for _ in $(seq 100); do
        [[ $(curl -s "127.0.0.1:$((port + 1))/metrics" | awk '$1 == "argus_agent_ranks" {print $2}') == 8 ]] && break
        sleep 0.1
    done
    touch "$T/go"
    sleep 5 # the first steps: symbols of the ranks' libraries loaded
fi
m() { curl -s "127.0.0.1:$((port + 1))/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
# CPU time of all the agent's threads in ns (schedstat: finer than the
# 10 ms ticks of /proc/PID/stat, which are 0.05% of a core over 20 s)
cpu_ns() { cat /proc/$agent/task/*/schedstat | awk '{ s += $1 } END { print s }'; }
# frame bytes all collectors received (both of the pair with STANDBY=1)
wire() {
    local p n=0
    for p in $((port + 2)) $((port + 4)); do
        n=$((n + $(curl -s "127.0.0.1:$p/metrics" 2>/dev/null | awk '$1 == "argus_ingest_bytes_total" {print $2; f=1} END {if (!f) print 0}')))
    done
    echo $n
}
c0=$(cpu_ns); s0=$(m argus_agent_steps_total); b0=$(m argus_agent_frame_bytes_total); w0=$(wire)
sleep "$DURATION"
c1=$(cpu_ns); s1=$(m argus_agent_steps_total); b1=$(m argus_agent_frame_bytes_total); w1=$(wire)
# memory in the steady state: the span ring fills up to its cap
# (spans.ring_bytes) before spans.keep ages anything out at these rates, so
# the peak RSS is read once the ring is full (or stopped growing: a mode
# with few spans), at most FILL_MAX seconds later
cap=$("${ARGUS_AGENT:-$BIN/argus-agent}" --print-config 2>/dev/null | awk -F' = ' '$1 == "ring_bytes" {print $2}')
cap_b=$(/usr/bin/python3 -c 'import sys; v=sys.argv[1]; u={"KiB":1<<10,"MiB":1<<20,"GiB":1<<30}
n=next((k for k in u if v.endswith(k)),None); print(int(float(v[:-3])*u[n]) if n else int(v or 0))' "$cap")
fill0=$SECONDS last=-1
while ((SECONDS - fill0 < ${FILL_MAX:-240})); do
    ring=$(m argus_agent_span_ring_bytes); ring=${ring%.*}
    ((ring * 100 >= cap_b * 97 || ring == last)) && break
    last=$ring
    sleep 5
done
echo "span ring: $((ring / 1048576)) MiB of its $cap cap $( ((ring * 100 >= cap_b * 97)) && echo "(full)" || echo "(not full)") after $((DURATION + SECONDS - fill0)) s"
rss=$(awk '/VmHWM/ {print $2}' /proc/$agent/status)
/usr/bin/python3 - "$c0" "$c1" "$s0" "$s1" "$b0" "$b1" "$rss" "$DURATION" "$MODE" "$w0" "$w1" \
    "${STANDBY:-0}" <<'PY'
import sys
c0, c1, s0, s1, b0, b1, rss, dur = map(float, sys.argv[1:9])
w0, w1 = float(sys.argv[10]), float(sys.argv[11])
cpu = (c1 - c0) / 1e9
steps = s1 - s0
mb = (b1 - b0) / 1e6
print("agent, 8 ranks x 10 steps/s for %.0fs (%s): %.0f step records, %.2f MB through the spool" % (dur, sys.argv[9], steps, mb))
print("agent CPU %.2f%% of one core; %.1f ms per 1,000 step records; %.0f ms per MB of spool; peak RSS %.1f MiB" % (
    100 * cpu / dur, 1000 * cpu / steps * 1000 if steps else 0, 1000 * cpu / mb if mb else 0, rss / 1024))
print("collectors received %.2f MB (%.0f bytes per step record)%s" % (
    (w1 - w0) / 1e6, (w1 - w0) / steps if steps else 0,
    ", standby on: two collectors" if sys.argv[12] == "1" else ""))
print("target (under 1%% of one core and 64 MiB): %s" % ("met" if 100 * cpu / dur < 1 and rss / 1024 < 64 else "not met"))
PY
