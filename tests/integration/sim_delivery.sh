#!/usr/bin/env bash
# argus-sim's delivery modes against a real collector (64 ranks on 8 agent
# streams, 60 steps at 20 steps/s each): lockstep, age, realistic, realistic
# with a 2 s stall of node 1, a 3 s outage of node 2 (spooled batches replayed
# after, under the same or a new epoch), a start spread, and a clock offset of
# nodes 3 and 4. Every run must store
# every record exactly once with the content sent (argus-sim --verify), and
# its send log must show the schedule: every record in an acked batch, no send
# of the stalled or cut node inside its window, the spooled batches replayed
# after the outage, batches of about max_age of steps in age modes.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
sim() { # job [flags]: run, then verify with the same flags
    local job=$1 base; shift
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$job" --ranks 64 --steps 60 --rate 20 \
        --seed 3 --send_log "$T/$job.log" "$@" >"$T/$job.json" \
        || fail "$job: sim failed: $(cat "$T/$job.json")"
    base=$(json_get "$T/$job.json" base_time)
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$job" --ranks 64 --steps 60 \
        --base_time "$base" --seed 3 --verify "$@" >"$T/$job.verify" \
        || fail "$job: not everything stored as sent: $(cat "$T/$job.verify")"
    log "$job: $(tail -n 1 "$T/$job.verify")"
}
check_log() { # job mode [window kind node at len]
    /usr/bin/python3 - "$T/$1.json" "$T/$1.log" "$@" <<'PY' || fail "$1: send log: see above"
import json, sys
run = json.loads(open(sys.argv[1]).read().splitlines()[0])
lines = [json.loads(l) for l in open(sys.argv[2])]
job, mode = sys.argv[3], sys.argv[4]
start = run["start_unix_ns"]
assert run["delivery"] == mode, ("delivery", run["delivery"], mode)
total = sum(l["records"] for l in lines)
assert total == 64 * 60, ("records in acked batches", total)
for l in lines:
    assert l["acked_unix_ns"] >= l["sent_unix_ns"] > 0, l
steps = sorted(l["nsteps"] for l in lines if l["first_step"] + l["nsteps"] < 60)
if mode == "lockstep":
    assert set(steps) == {2}, ("lockstep batch sizes", set(steps))
else:  # 1 s of steps at 20 steps/s; a stall or outage does not merge batches
    assert max(steps) <= 20 and sorted(steps)[len(steps) // 2] == 20, ("age batch sizes", steps)
if len(sys.argv) > 5:
    kind, node, at, length = sys.argv[5], int(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
    lo, hi = start + at * 1e9 + 20e6, start + (at + length) * 1e9 - 20e6
    mine = [l for l in lines if l["agent"] == node]
    inside = [l for l in mine if lo < l["sent_unix_ns"] < hi]
    assert not inside, ("sent inside the %s window" % kind, inside)
    if kind == "outage":
        replay = [l for l in mine if l["replay"]]
        assert replay, "no batch was replayed after the outage"
        assert all(l["sent_unix_ns"] >= hi for l in replay), "replayed before the outage ended"
        seqs = [l["seq"] for l in sorted(mine, key=lambda l: l["first_step"])]
        assert seqs == sorted(seqs), ("replay out of order", seqs)
        assert run["reconnects"] >= 1, "the stream never reconnected"
    held = [l for l in mine if l["planned_s"] >= at + length - 0.001]
    assert held, "nothing was held back by the %s" % kind
print("%s: %d batches, %d records, batch sizes %s..%s" % (job, len(lines), total, steps[0], steps[-1]))
PY
}

sim lockstep --delivery lockstep --steps_per_batch 2
check_log lockstep lockstep
sim age --delivery age
check_log age age
sim realistic --delivery realistic --delay 200ms --jitter 300ms
check_log realistic realistic
sim stall --stall 1:0.5:2
check_log stall realistic stall 1 0.5 2
sim outage --outage 2:0.5:3
check_log outage realistic outage 2 0.5 3
# the same outage replayed under a new epoch: what was in flight at the cut
# may come twice under new sequence numbers, and is stored and counted once
sim outage_epoch --outage 2:0.5:3 --outage_replay new_epoch
check_log outage_epoch realistic outage 2 0.5 3
sim spread --start_spread 3s
check_log spread realistic
sim clock --clock_offset 3:-2.5,4:2
check_log clock realistic

# bad delivery options are refused with a sentence, before anything is sent
for bad in "--stall 9:1:1" "--outage 1:1" "--clock_offset x:1" "--delivery sideways"; do
    # shellcheck disable=SC2086
    if "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job bad --ranks 64 --rate 20 $bad \
        >"$T/bad.out" 2>&1; then
        fail "argus-sim accepted $bad"
    fi
    grep -q "argus-sim: .*\(node\|NODE\|one of\|lockstep\)" "$T/bad.out" \
        || fail "no clear error for $bad: $(cat "$T/bad.out")"
done
ctl --json jobs | grep -q '"bad"' && fail "a refused run sent something"
echo "all delivery modes stored every record"
