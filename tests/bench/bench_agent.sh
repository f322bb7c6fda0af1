#!/usr/bin/env bash
# Agent cost: 8 local ranks at 10 steps/s (the Kineto trace replayed: 577 real
# kernel events per step through the KDE summarizer, batcher, spool and
# exporter) into a real collector for DURATION seconds. Prints the agent's CPU
# (share of one core, per 1,000 step records shipped, per MB through the
# spool) and peak RSS. Target: under 1% of one core and under 64 MiB.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$REPO/build/bin
TRACE=${ARGUS_TRACE:-$REPO/../shared/data/kineto/trace_filter__sampled_rank-0.json.gz}
[[ -f $TRACE ]] || { echo "skip: no Kineto trace at $TRACE"; exit 0; }
T=$(mktemp -d /tmp/argus-bench-agent.XXXXXX)
port=$((22000 + RANDOM % 9000))
trap 'kill -9 $col $agent 2>/dev/null; rm -rf "$T"' EXIT
DURATION=${DURATION:-30}
# the ranks' work: the Kineto trace through the summarizer (trace), or step
# records already summarised, as argus-sim makes them (records)
MODE=${MODE:-trace}
if [[ $MODE == records ]]; then
    "$BIN/argus-sim" --job bench --ranks 8 --steps $((DURATION * 10 + 100)) --record "$T/rec.bin" >/dev/null
    src=(--replay.records "$T/rec.bin" --replay.rate 10)
else
    src=(--replay.trace "$TRACE" --replay.ranks 8 --replay.rate 10)
fi
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --http.listen "" --store.dir "$T/store" \
    >"$T/collector.log" 2>&1 &
col=$!
"${ARGUS_AGENT:-$BIN/argus-agent}" --collector.address "127.0.0.1:$port" --spool.dir "$T/spool" \
    --http.listen "127.0.0.1:$((port + 1))" --cupti.socket "$T/cupti.sock" --probes.enable "" \
    "${src[@]}" >"$T/agent.log" 2>&1 &
agent=$!
sleep 3 # start-up (trace parsing) is not what is measured
m() { curl -s "127.0.0.1:$((port + 1))/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
# CPU time of all the agent's threads in ns (schedstat: finer than the
# 10 ms ticks of /proc/PID/stat, which are 0.05% of a core over 20 s)
cpu_ns() { cat /proc/$agent/task/*/schedstat | awk '{ s += $1 } END { print s }'; }
c0=$(cpu_ns); s0=$(m argus_agent_steps_total); b0=$(m argus_agent_frame_bytes_total)
sleep "$DURATION"
c1=$(cpu_ns); s1=$(m argus_agent_steps_total); b1=$(m argus_agent_frame_bytes_total)
rss=$(awk '/VmHWM/ {print $2}' /proc/$agent/status)
/usr/bin/python3 - "$c0" "$c1" "$s0" "$s1" "$b0" "$b1" "$rss" "$DURATION" "$MODE" <<'PY'
import sys
c0, c1, s0, s1, b0, b1, rss, dur = map(float, sys.argv[1:9])
cpu = (c1 - c0) / 1e9
steps = s1 - s0
mb = (b1 - b0) / 1e6
print("agent, 8 ranks x 10 steps/s for %.0fs (%s): %.0f step records, %.2f MB through the spool" % (dur, sys.argv[9], steps, mb))
print("agent CPU %.2f%% of one core; %.1f ms per 1,000 step records; %.0f ms per MB of spool; peak RSS %.1f MiB" % (
    100 * cpu / dur, 1000 * cpu / steps * 1000 if steps else 0, 1000 * cpu / mb if mb else 0, rss / 1024))
print("target (under 1%% of one core and 64 MiB): %s" % ("met" if 100 * cpu / dur < 1 and rss / 1024 < 64 else "not met"))
PY
