#!/usr/bin/env bash
# Ingest of a collector set (issue 28): 10,240 ranks as JOBS jobs (argus-sim,
# 8 ranks per agent stream, batches of 5 steps, frames built before the
# clock starts) placed on a set of 1, 2 and 4 collectors, all on this
# machine. With two or more members every job goes to its primary and its
# standby (argus-sim --collector_set: every batch twice), so the set does
# twice the work of one collector for the same fleet. Per set size: the
# fleet's rate (distinct rank-steps acked by both of a job's collectors per
# second of wall time, the slowest job's end), at the target load (5
# steps/s per rank = 51,200 offered) and as fast as acks allow, and the
# collectors' CPU. All collectors share these cores: the figures say what
# the standby costs here, not how a set of machines scales.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$REPO/build/bin
T=$(mktemp -d /tmp/argus-bench-set.XXXXXX)
cols=()
trap 'kill -9 "${cols[@]}" 2>/dev/null; rm -rf "$T"' EXIT
RANKS=${RANKS:-10240} JOBS=${JOBS:-4} STEPS=${STEPS:-40}
base=$((24000 + RANDOM % 8000))

start_set() { # N: N collectors; the set in $SET
    local n=$1 i list=()
    for ((i = 0; i < n; i++)); do
        "$BIN/argus-collector" --grpc.listen "127.0.0.1:$((base + i))" --grpc.plaintext true \
            --http.listen "" --store.dir "$T/store.$n.$i" >"$T/collector.$n.$i.log" 2>&1 &
        cols+=($!)
        list+=("127.0.0.1:$((base + i))")
    done
    sleep 0.5
    SET=$(IFS=,; echo "${list[*]}")
}
cpu() { local s=0 p; for p in "${cols[@]}"; do s=$((s + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $s; }

run() { # N SET RATE
    local n=$1 set=$2 rate=$3 j c0 c1 t0 t1 pids=()
    c0=$(cpu) t0=$(date +%s.%N)
    for ((j = 0; j < JOBS; j++)); do
        "$BIN/argus-sim" --collector_set "$set" --job "bench-$rate-$j" --ranks $((RANKS / JOBS)) \
            --steps "$STEPS" --rate "$rate" --delivery lockstep --steps_per_batch 5 --pregen \
            --threads 1 --timeout 600s >"$T/sim.$n.$rate.$j.json" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    c1=$(cpu) t1=$(date +%s.%N)
    /usr/bin/python3 - "$n" "$rate" "$RANKS" "$STEPS" "$(echo "$t1 - $t0" | bc -l)" \
        "$(echo "($c1 - $c0) / 100" | bc -l)" "$T"/sim."$n.$rate".*.json <<'PY'
import json, sys
n, rate, ranks, steps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
wall, cpu = float(sys.argv[5]), float(sys.argv[6])
lines = [json.loads(l) for f in sys.argv[7:] for l in open(f) if l.startswith("{")]
ok = all(l.get("complete") for l in lines)
acked = sum(l["rank_steps_acked"] for l in lines)
slowest = max(l["elapsed_s"] for l in lines)
offered = "max" if rate == 0 else "%.0f" % (rate * ranks)
print("%d collector%s, offered %-6s rank-steps/s: fleet %6.0f rank-steps/s (%d copies acked, "
      "slowest stream %.1f s), collectors' CPU %.2f cores, %s" % (
      n, "" if n == 1 else "s", offered, ranks * steps / slowest, acked // (ranks * steps), slowest,
      cpu / wall, "complete" if ok else "INCOMPLETE"))
PY
}

echo "ranks $RANKS in $JOBS jobs, $STEPS steps per rank, every job to its primary and standby"
for n in 1 2 4; do
    start_set "$n"
    run "$n" "$SET" 5
    run "$n" "$SET" 0
    kill -9 "${cols[@]}" 2>/dev/null
    wait "${cols[@]}" 2>/dev/null
    cols=()
done
