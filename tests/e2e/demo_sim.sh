#!/usr/bin/env bash
# The simulator demo (tests/e2e/demo.sh runs it where the demo on a real
# PyTorch job cannot run, or with ARGUS_DEMO=sim). Starts a collector (its
# built-in configuration, a fresh store in a temporary directory), streams a
# 256-rank job with one compute straggler into it over the real protocol
# (argus-sim, 32 simulated nodes of 8 GPUs, delivering like real agents), and
# shows what an SRE would see: the straggler report from argusctl and a rank
# x step heatmap. Exits 1 when no report names the simulator's culprit.
# Stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${ARGUS_BUILD:-build}/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the demo's collector is plaintext on loopback
work=$(mktemp -d /tmp/argus-demo.XXXXXX)
out=${ARGUS_DEMO_OUT:-$PWD/build/demo}
mkdir -p "$out"
pids=()
cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || continue
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ctl() { "$BIN/argusctl" --collector "127.0.0.1:$port" "$@"; }

echo "== argus demo: collector on 127.0.0.1:$port"
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --grpc.plaintext true --http.listen "" \
    --store.dir "$work/store" >"$work/collector.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do ctl --timeout 1s jobs >/dev/null 2>&1 && break; sleep 0.1; done

echo "== a 256-rank job (TP=8, DP=32) for 100 steps; one GPU turns 1.6x slower at step 20"
"$BIN/argus-sim" --collector "127.0.0.1:$port" --job demo --scenario compute-straggler \
    --ranks 256 --tp 8 --steps 100 --rate 25 --timeout 2m >"$work/sim.json"
head -n 1 "$work/sim.json" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print("   sent %d rank-steps in %d batches over %d agent streams in %.1fs, all acked: %s" % (r["rank_steps_acked"], r["batches_acked"], r["agents"], r["elapsed_s"], r["complete"]))'
tail -n 1 "$work/sim.json" | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin); print("   ground truth: rank %s, cause %s, from step %d" % (",".join(map(str,t["culprits"])), t["cause"], t["onset"]))'
culprit=$(tail -n 1 "$work/sim.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')

# the first report naming the culprit (diagnosis runs behind the acks)
found() {
    ctl --json stragglers --job demo | /usr/bin/python3 -c '
import json, sys
c = int(sys.argv[1])
ids = [r["id"] for r in json.load(sys.stdin)["reports"] if any(s["rank"] == c for s in r["suspects"])]
print(ids[0]) if ids else sys.exit(1)' "$culprit"
}
id=""
for _ in $(seq 60); do id=$(found 2>/dev/null) && break; sleep 0.5; done

echo
echo "== argusctl jobs"
ctl jobs
echo
echo "== argusctl stragglers --job demo"
ctl stragglers --job demo >"$work/stragglers.txt" || true
head -n 12 "$work/stragglers.txt"
echo
ctl heatmap --job demo -o "$out/heatmap.svg"
if [[ -z $id ]]; then
    echo "== no report named rank $culprit (the reports above are all argus found)"
    exit 1
fi
echo "== argusctl report $id"
ctl report "$id"
echo
echo "== argusctl cost: where the GPU-hours went (reports of the last 7 days, by node;"
echo "   GPU-hours lost is the step time the suspects cost x ranks, one GPU per rank)"
ctl cost
echo
echo "== done: rank $culprit named in report $id; the heatmap is $out/heatmap.svg"
