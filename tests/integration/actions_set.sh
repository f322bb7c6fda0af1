#!/usr/bin/env bash
# Actions in a collector set of two: a compute straggler job sent by argus-sim
# --collector_set to its primary and its standby (both diagnose it and page).
# Both collectors have the same actions.rules (dry run); only the job's
# primary records an action, the standby none, so a set never acts twice for
# one job.
# test-cpu: idle: one short sim run to two collectors
source "$(dirname "$0")/lib.sh"

for i in 1 2; do
    CP[$i]=$(free_port)
    HP[$i]=$(free_port)
done
SET="127.0.0.1:${CP[1]},127.0.0.1:${CP[2]}"
HOOK="$REPO/deploy/actions/slurm-drain.sh"
for i in 1 2; do
    start_collector_on "${CP[$i]}" "${HP[$i]}" "$T/c$i" --cluster.set "$SET" \
        --cluster.self "127.0.0.1:${CP[$i]}" --actions.rules "compute:$HOOK"
done
"$BIN/argus-sim" --collector_set "$SET" --job set-act --scenario compute-straggler --ranks 32 \
    --steps 100 --rate 60 --steps_per_batch 2 --tp 2 --seed 3 --fault_rank 3 \
    >"$T/sim.json" 2>"$T/sim.log" || fail "sim failed: $(tail -2 "$T/sim.json" "$T/sim.log")"
primary=$("$BIN/argusctl" --collectors "$SET" --json collectors --job set-act |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["primary"]["address"])')
[[ $primary == "127.0.0.1:${CP[1]}" ]] && standby="127.0.0.1:${CP[2]}" || standby="127.0.0.1:${CP[1]}"
# records COLLECTOR: its action records of kind drain
records() {
    "$BIN/argusctl" --collector "$1" actions --json | /usr/bin/python3 -c '
import json, sys
print(sum(1 for a in json.load(sys.stdin).get("actions", []) if a["kind"] == "drain"))'
}
paging() { # COLLECTOR: its paging reports of the job
    "$BIN/argusctl" --collector "$1" stragglers --job set-act --json | /usr/bin/python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin).get("reports", []) if r.get("pages")))'
}
export -f records paging
export BIN
wait_every "the primary's action" 30 0.5 bash -c "[[ \$(records $primary) == 1 ]]"
wait_every "the standby's paging report" 30 0.5 bash -c "[[ \$(paging $standby) -ge 1 ]]"
sleep 2 # the standby's worker would have acted by now
[[ $(records "$standby") == 0 ]] || fail "the standby acted too: $("$BIN/argusctl" --collector "$standby" actions)"
"$BIN/argusctl" --collectors "$SET" actions >/dev/null 2>"$T/set.err" && fail "actions over a set was accepted"
grep -q "name one collector" "$T/set.err" || fail "actions over a set: $(cat "$T/set.err")"
echo "actions in a set: the primary acted ($primary), the standby did not"
