#!/usr/bin/env bash
# Crash safety: while argus-sim streams, kill -9 the collector several times
# and restart it. At the end every batch is stored exactly once (rank-step
# count from the job index and a byte-for-byte content check), and the
# collector answers queries again within seconds of each restart.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
base=$(( $(date +%s) * 1000000000 ))
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job crash --ranks 64 --steps 300 --rate 25 \
    --base_time "$base" --timeout 120s >"$T/sim.json" 2>"$T/sim.err" &
sim=$!
PIDS+=("$sim")
for i in 1 2 3 4; do
    sleep 1.5
    kill -9 "$COLLECTOR_PID"
    wait "$COLLECTOR_PID" 2>/dev/null
    log "killed collector ($i), restarting"
    sleep 0.5
    t0=$(date +%s.%N)
    start_collector "$T/store"
    log "serving queries again after $(echo "$(date +%s.%N) - $t0" | bc)s"
done
wait "$sim" || fail "sim did not finish: $(cat "$T/sim.json") $(tail -3 "$T/sim.err")"
cat "$T/sim.json"
[[ $(json_get "$T/sim.json" reconnects) -ge 4 ]] || fail "sim did not reconnect 4 times"
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job crash --ranks 64 --steps 300 --verify \
    --base_time "$base" || fail "verify after crashes failed"
dups=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '/^argus_ingest_duplicate_batches_total/ {print $2}')
log "duplicates recognised by the last collector instance: $dups"
echo "crash safety ok"
