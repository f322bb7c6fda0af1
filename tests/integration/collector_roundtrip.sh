#!/usr/bin/env bash
# Round trip: argus-sim sends 64 ranks x 50 steps over the real protocol;
# argusctl returns exactly those step records (count, order, content).
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
# paced (--rate): acks no longer wait on diagnosis, so unpaced streams race
# up to max_inflight steps apart, and the engine that closes steps by arrival
# order pages their ranks SILENT (issue 12; event-time closing ends that)
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job rt --ranks 64 --steps 50 --rate 200 \
    >"$T/sim.json" || fail "sim did not complete: $(cat "$T/sim.json")"
base=$(json_get "$T/sim.json" base_time)
[[ $(json_get "$T/sim.json" rank_steps_acked) == 3200 ]] || fail "sim acked $(cat "$T/sim.json")"

# content: every (rank, step) regenerated and compared byte for byte
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job rt --ranks 64 --steps 50 --verify \
    --base_time "$base" || fail "verify failed"

# argusctl: JSON and table views agree with what was sent
ctl --json steps --job rt --limit 100000 >"$T/steps.json" || fail "argusctl steps failed"
/usr/bin/python3 - "$T/steps.json" <<'PY' || fail "argusctl JSON wrong"
import json, sys
d = json.load(open(sys.argv[1]))
steps = d["steps"]
assert len(steps) == 3200, len(steps)
keys = [(s["step"], s["rank"]) for s in steps]
assert keys == sorted(keys) and len(set(keys)) == 3200, "order or duplicates"
assert {k[1] for k in keys} == set(range(64)) and {k[0] for k in keys} == set(range(50))
names = {p.get("name") for s in steps for p in s["phases"]}
assert names == {"forward", "backward", "optimizer", "allreduce"}, names
PY
n=$(ctl steps --job rt --rank 7 --from 10 --to 19 | grep -c '^ *1[0-9] *7 ')
[[ $n == 10 ]] || fail "argusctl steps --rank 7 --from 10 --to 19 gave $n rows"
ctl ranks --job rt | grep -q '^ *63 ' || fail "rank 63 missing from argusctl ranks"
ctl jobs | grep -q '^rt .* 64 .* 64 .* 49 .* 3200' || fail "argusctl jobs: $(ctl jobs)"

# exit codes: not found 1, usage 2, unreachable 3
ctl steps --job nope >/dev/null 2>&1; [[ $? == 1 ]] || fail "unknown job should exit 1"
ctl steps >/dev/null 2>&1; [[ $? == 2 ]] || fail "missing --job should exit 2"
ctl report no-such-report >/dev/null 2>&1; [[ $? == 1 ]] || fail "unknown report should exit 1"
"$BIN/argusctl" --collector 127.0.0.1:1 --timeout 2s jobs >/dev/null 2>&1
[[ $? == 3 ]] || fail "unreachable collector should exit 3"
ctl stragglers --job rt | grep -q "no straggler reports" || fail "stragglers output: $(ctl stragglers --job rt)"

# /metrics counts what was ingested
curl -sf "127.0.0.1:$HPORT/metrics" | grep -q '^argus_ingest_rank_steps_total 3200$' \
    || fail "metrics: $(curl -s 127.0.0.1:$HPORT/metrics | grep rank_steps)"
curl -sf "127.0.0.1:$HPORT/healthz" | grep -q ok || fail "healthz"
echo "round trip ok"
