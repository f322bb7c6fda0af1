#!/usr/bin/env bash
# make demo: run argus end to end on an embedded default and show the result.
# Starts everything it needs in a temporary directory and stops it all on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${ARGUS_BUILD:-build}/bin
work=$(mktemp -d /tmp/argus-demo.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

port=$((17000 + RANDOM % 2000))
echo "demo: collector on 127.0.0.1:$port, data in $work"
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --http.listen "" \
    --store.dir "$work/store" &
pids+=($!)
"$BIN/argus-agent" --collector.address "127.0.0.1:$port" --spool.dir "$work/spool" \
    --http.listen "" &
pids+=($!)
sleep 1
"$BIN/argusctl" --collector "127.0.0.1:$port" --help | head -n 5
echo "demo: both daemons started; stopping them"
