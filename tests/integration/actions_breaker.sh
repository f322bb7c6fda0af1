#!/usr/bin/env bash
# Actions on blamed nodes with the Slurm example hook (deploy/actions/
# slurm-drain.sh) against a fake scontrol on the collector's PATH that
# records its calls. argus-sim compute stragglers on chosen nodes:
# - dry run (the default): the record says would_run, scontrol is not called;
# - real, actions.max 2: one drain per node despite repeated reports of it;
#   the third node trips the breaker (argusctl actions says OPEN, the metric
#   is 1) and scontrol is not called for it;
# - a restart keeps the breaker open;
# - undo of a breaker record is refused, undo of a drain calls State=RESUME
#   once; reset closes the breaker (recorded);
# - the Kubernetes example taints and untaints through a fake kubectl.
# test-cpu: idle: four short sim runs and a few collector restarts
source "$(dirname "$0")/lib.sh"

CPORT=$(free_port)
HPORT=$(free_port)
mkdir -p "$T/bin"
cat >"$T/bin/scontrol" <<FAKE
#!/bin/sh
echo "\$*" >>$T/scontrol.log
echo "scontrol: updated"
FAKE
chmod +x "$T/bin/scontrol"
HOOK="$REPO/deploy/actions/slurm-drain.sh"

collector() { # extra flags
    PATH="$T/bin:$PATH" start_collector "$T/store" --actions.rules "compute:$HOOK" \
        --actions.window 1h "$@"
}
stop_collector() {
    kill "$COLLECTOR_PID"
    wait "$COLLECTOR_PID" 2>/dev/null || true
}
# straggle JOB RANK: a compute straggler at RANK (node RANK/8: node000, node001, ...) for 140 steps
# (the report repeats every diag.window steps)
straggle() {
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$1" --scenario compute-straggler \
        --ranks 32 --steps 140 --rate 60 --steps_per_batch 2 --tp 2 --seed 3 --fault_rank "$2" \
        >"$T/sim-$1.json" || fail "sim $1 failed: $(cat "$T/sim-$1.json")"
}
actions_json() { ctl actions --json >"$T/actions.json" 2>"$T/actions.err"; }
# count KIND OUTCOME [NODE]: records of that kind and outcome (on NODE)
count() {
    actions_json && /usr/bin/python3 - "$T/actions.json" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k, o = sys.argv[2], sys.argv[3]
n = sys.argv[4] if len(sys.argv) > 4 else None
print(sum(1 for a in d.get("actions", []) if a["kind"] == k and a["outcome"] == o
          and (n is None or a.get("node") == n)))
PY
}
export -f count actions_json ctl
export T BIN CPORT

log "dry run"
collector
straggle dry 3
wait_every "a would_run record" 30 0.5 bash -c '[[ $(count drain would_run node000) == 1 ]]'
[[ ! -e $T/scontrol.log ]] || fail "dry run called scontrol: $(cat "$T/scontrol.log")"
ctl actions | grep -q "mode: dry run" || fail "argusctl actions: $(ctl actions)"
ctl actions | grep -q "would_run" || fail "argusctl actions: $(ctl actions)"
stop_collector

log "real, max 2"
collector --actions.dry_run false --actions.max 2
straggle real-a 3
wait_every "the drain of node000" 30 0.5 bash -c '[[ $(count drain done node000) == 1 ]]'
reports=$(ctl stragglers --job real-a --json | /usr/bin/python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin).get("reports", []) if r.get("pages") and
          any(s.get("node") == "node000" and s.get("pages") for s in r["suspects"])))')
[[ $reports -ge 2 ]] || fail "want repeated paging reports of node000, got $reports"
straggle real-b 11
wait_every "the drain of node001" 30 0.5 bash -c '[[ $(count drain done node001) == 1 ]]'
straggle real-c 19
wait_every "the breaker open" 30 0.5 bash -c '[[ $(count breaker_open open) == 1 ]]'
grep -c "State=DRAIN" "$T/scontrol.log" | grep -qx 2 || fail "scontrol calls: $(cat "$T/scontrol.log")"
grep -q "update NodeName=node000 State=DRAIN Reason=argus: compute straggler, report" \
    "$T/scontrol.log" || fail "scontrol calls: $(cat "$T/scontrol.log")"
grep -q "node002" "$T/scontrol.log" && fail "the breaker let node002 through"
[[ $(count drain "done" node000) == 1 ]] || fail "node000 drained more than once"
ctl actions | grep -q "breaker: OPEN" || fail "argusctl actions: $(ctl actions)"
[[ $(metric "$HPORT" argus_actions_breaker_open) == 1 ]] || fail "breaker metric"
[[ $(metric "$HPORT" 'argus_actions_total{cause="compute",outcome="done"}') == 2 ]] ||
    fail "done metric: $(curl -s "127.0.0.1:$HPORT/metrics" | grep argus_actions)"
[[ $(metric "$HPORT" 'argus_actions_total{cause="compute",outcome="standing"}') -ge 1 ]] ||
    fail "standing metric: $(curl -s "127.0.0.1:$HPORT/metrics" | grep argus_actions)"
stop_collector

log "restart keeps the breaker; undo and reset"
collector --actions.dry_run false --actions.max 2
ctl actions | grep -q "breaker: OPEN" || fail "the breaker closed on restart: $(ctl actions)"
actions_json
ids=$(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
b = [a["id"] for a in d["actions"] if a["kind"] == "breaker_open"][0]
r = [a["id"] for a in d["actions"] if a["kind"] == "drain" and a["outcome"] == "done" and a["node"] == "node000"][0]
print(b, r)' "$T/actions.json")
read -r breaker_id drain_id <<<"$ids"
ctl actions undo "$breaker_id" >"$T/undo.out" 2>&1
[[ $? == 4 ]] || fail "undo of a breaker record: $(cat "$T/undo.out")"
ctl actions undo 999999 >/dev/null 2>&1
[[ $? == 1 ]] || fail "undo of an unknown action did not exit 1"
ctl actions undo "$drain_id" >"$T/undo.out" 2>&1 || fail "undo: $(cat "$T/undo.out")"
grep -c "NodeName=node000 State=RESUME" "$T/scontrol.log" | grep -qx 1 ||
    fail "scontrol calls: $(cat "$T/scontrol.log")"
ctl actions undo "$drain_id" >/dev/null 2>&1 && fail "a second undo was accepted"
grep -c "State=RESUME" "$T/scontrol.log" | grep -qx 1 || fail "RESUME called again"
ctl actions reset "checked the nodes" | grep -q "it was open" || fail "reset"
ctl actions | grep -q "breaker: closed" || fail "argusctl actions: $(ctl actions)"
[[ $(count breaker_reset reset) == 1 ]] || fail "the reset is not recorded"
[[ $(metric "$HPORT" argus_actions_breaker_open) == 0 ]] || fail "breaker metric after reset"

log "the Kubernetes example against a fake kubectl"
printf '#!/bin/sh\necho "$*" >>%s/kubectl.log\n' "$T" >"$T/bin/kubectl"
chmod +x "$T/bin/kubectl"
K8S="$REPO/deploy/actions/k8s-taint.sh"
PATH="$T/bin:$PATH" ARGUS_ACTION=drain ARGUS_NODE=n9 ARGUS_CAUSE=link "$K8S" </dev/null || fail "k8s drain"
PATH="$T/bin:$PATH" ARGUS_ACTION=undo ARGUS_NODE=n9 ARGUS_CAUSE=link "$K8S" </dev/null || fail "k8s undo"
PATH="$T/bin:$PATH" ARGUS_ACTION=cordon ARGUS_NODE=n9 "$K8S" </dev/null 2>/dev/null && fail "k8s: a bad action ran"
diff <(printf 'taint nodes n9 --overwrite argus/straggler=link:NoSchedule\ntaint nodes n9 argus/straggler:NoSchedule-\n') \
    "$T/kubectl.log" || fail "kubectl calls: $(cat "$T/kubectl.log")"
echo "actions: dry run, once per node, breaker, restart, undo, reset, k8s example ok"
