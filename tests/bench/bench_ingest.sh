#!/usr/bin/env bash
# Collector ingest benchmark: argus-sim as 10,240 ranks over 1,280 agent
# streams (8 ranks per node) on this machine, batches of 5 steps per agent,
# all frames built before the clock starts (--pregen) so the figures are the
# collector's. Prints the sustained rate at the target load (5 steps/s per
# rank = 51,200 rank-steps/s offered), at the goal's (10 steps/s, 102,400
# offered: issue 30), the ceiling (as fast as acks allow),
# collector CPU and peak RSS, and bytes on disk per rank-step. Lockstep
# delivery (every stream paced together), as the figures before argus-sim
# learnt realistic delivery, so runs of older builds compare. Kernel groups
# go coded as agents send them to a collector that reads the coding;
# CODE_KERNELS=false sends them plain (for ARGUS_COLLECTOR builds older than it).
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$REPO/build/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the bench's collector is plaintext on loopback
T=$(mktemp -d /tmp/argus-bench.XXXXXX)
port=$((20000 + RANDOM % 10000))
trap 'kill -9 $col 2>/dev/null; rm -rf "$T"' EXIT
ranks=${RANKS:-10240} steps=${STEPS:-60}

"${ARGUS_COLLECTOR:-$BIN/argus-collector}" --grpc.listen "127.0.0.1:$port" --grpc.plaintext true --http.listen "" --store.dir "$T/store" \
    >"$T/collector.log" 2>&1 &
col=$!
sleep 0.5
cpu() { awk '{print $14 + $15}' /proc/$col/stat; }
run() { # job rate
    local c0 t0 c1 t1
    c0=$(cpu); t0=$(date +%s.%N)
    "$BIN/argus-sim" --collector "127.0.0.1:$port" --job "$1" --ranks "$ranks" --steps "$steps" \
        --rate "$2" --delivery lockstep --steps_per_batch 5 --pregen \
        --code_kernels "${CODE_KERNELS:-true}" --timeout 600s >"$T/$1.json"
    c1=$(cpu); t1=$(date +%s.%N)
    /usr/bin/python3 - "$T/$1.json" "$2" "$ranks" "$(echo "($c1 - $c0) / 100" | bc -l)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); rate = float(sys.argv[2]); ranks = int(sys.argv[3])
cpu = float(sys.argv[4])
offered = "max" if rate == 0 else "%.0f" % (rate * ranks)
print("offered %-7s rank-steps/s: achieved %6.0f rank-steps/s, ack p50 %7.1f ms p99 %7.1f ms, "
      "collector CPU %.2f cores (%.0f rank-steps per CPU-second)" % (
      offered, r["rank_steps_per_s"], r["ack_latency_p50_ms"], r["ack_latency_p99_ms"],
      cpu / r["elapsed_s"], r["rank_steps_acked"] / cpu if cpu else 0))
PY
}
echo "ranks $ranks, agents $(( (ranks + 7) / 8 )), steps $steps per rank"
run target 5
run target100k 10
run ceiling 0
echo "collector peak RSS: $(awk '/VmHWM/ {print $2/1024 " MiB"}' /proc/$col/status)"
kill -TERM $col; wait $col 2>/dev/null
# the tables and the write-ahead log: not the free-space reserve (a 64 MiB
# file held for the disk-full recovery) nor RocksDB's small bookkeeping files
sst=$(cat "$T"/store/*.sst 2>/dev/null | wc -c) wal=$(cat "$T"/store/*.log 2>/dev/null | wc -c)
bytes=$((sst + wal)) n=$((3 * ranks * steps))
echo "store on disk after shutdown: $((bytes / 1048576)) MiB, $((bytes / n)) bytes per rank-step (SST + WAL, before a full compaction: SST $((sst / n)), WAL $((wal / n)))"
# what the store keeps once compacted (the goal's figure), on the same files
[[ -x $REPO/build/bench/bench_store ]] && "$REPO/build/bench/bench_store" --compact "$T/store" "$n"
