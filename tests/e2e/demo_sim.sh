#!/usr/bin/env bash
# The simulator demo (tests/e2e/demo.sh runs it where the real-job demo
# cannot run, or with ARGUS_DEMO=sim): argus end to end on an embedded default. Starts a collector (its
# built-in configuration, a fresh store in a temporary directory), streams a
# 256-rank job with one compute straggler into it over the real protocol
# (argus-sim, 32 simulated nodes of 8 GPUs), and shows what an SRE would see:
# the straggler report from argusctl and a rank x step heatmap. Stops
# everything it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${ARGUS_BUILD:-build}/bin
work=$(mktemp -d /tmp/argus-demo.XXXXXX)
out=${ARGUS_DEMO_OUT:-$PWD/build/demo}
mkdir -p "$out"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ctl() { "$BIN/argusctl" --collector "127.0.0.1:$port" "$@"; }

echo "== argus demo: collector on 127.0.0.1:$port"
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --http.listen "" \
    --store.dir "$work/store" --diag.step_timeout 2s >"$work/collector.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do ctl --timeout 1s jobs >/dev/null 2>&1 && break; sleep 0.1; done

echo "== a 256-rank job (TP=8, DP=32) for 100 steps; one GPU turns 1.6x slower at step 20"
"$BIN/argus-sim" --collector "127.0.0.1:$port" --job demo --scenario compute-straggler \
    --ranks 256 --tp 8 --steps 100 --rate 25 --steps_per_batch 2 >"$work/sim.json"
head -n 1 "$work/sim.json" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print("   sent %d rank-steps in %d batches over %d agent streams in %.1fs, all acked: %s" % (r["rank_steps_acked"], r["batches_acked"], r["agents"], r["elapsed_s"], r["complete"]))'
tail -n 1 "$work/sim.json" | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin); print("   ground truth: rank %s, cause %s, from step %d" % (",".join(map(str,t["culprits"])), t["cause"], t["onset"]))'
sleep 3 # the last steps close (step timeout 2 s)

echo
echo "== argusctl jobs"
ctl jobs
echo
echo "== argusctl stragglers --job demo"
ctl stragglers --job demo | head -n 12
id=$(ctl --json stragglers --job demo | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["reports"]; print(r[0]["id"] if r else "")')
if [[ -n $id ]]; then
    echo
    echo "== argusctl report $id"
    ctl report "$id"
fi
echo
ctl heatmap --job demo -o "$out/heatmap.svg"
echo "== done: the heatmap is $out/heatmap.svg; everything started has been stopped"
