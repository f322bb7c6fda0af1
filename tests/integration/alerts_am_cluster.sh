#!/usr/bin/env bash
# An HA pair of collectors paging through a real Alertmanager cluster: two
# collectors diagnose the same job (the simulator sends the same straggler job
# to both, as an agent sends each batch to a job's primary and standby) and
# send their alerts to both members of a two-node Alertmanager cluster
# (Debian's prometheus-alertmanager, gossip on loopback). The alerts carry
# the same labels whichever collector made them (job, cause, subject, rank,
# node, gpu, level), so the cluster deduplicates them: the receiver gets
# exactly one firing notification for the straggler.
# test-cpu: idle: waits on Alertmanager's group and peer timeouts
source "$(dirname "$0")/lib.sh"

start_am_cluster
start_collector "$T/store-a" --alerts.alertmanager "$AM_SINK" --alerts.backoff_max 1s
C2=$(free_port) H2=$(free_port)
start_collector_on "$C2" "$H2" "$T/store-b" --alerts.alertmanager "$AM_SINK" --alerts.backoff_max 1s
for p in "$CPORT" "$C2"; do
    "$BIN/argus-sim" --collector "127.0.0.1:$p" --job pair --scenario compute-straggler --ranks 64 \
        --steps 100 --rate 50 --steps_per_batch 2 --tp 2 --seed 7 >"$T/sim.$p.json" 2>&1 &
    PIDS+=($!)
done
culprit() { tail -1 "$T/sim.$1.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])'; }
wait_for "both simulated jobs" 120 bash -c "[[ -s $T/sim.$CPORT.json && -s $T/sim.$C2.json ]] && ! pgrep -f 'argus-sim --collector 127.0.0.1:($CPORT|$C2) ' >/dev/null"
rank=$(culprit "$CPORT")
[[ $rank == "$(culprit "$C2")" ]] || fail "the two runs disagree on the culprit"
# both collectors fired (each sent to both Alertmanagers) ...
firing() { CPORT=$1 ctl --json alerts --job pair | grep -q ALERT_STATUS_FIRING; }
for p in "$CPORT" "$C2"; do
    wait_every "collector :$p firing" 30 1 firing "$p"
done
wait_for "a notification" 60 bash -c "[[ -s $T/notes.jsonl ]]"
sleep 12 # past the second member's peer timeout (5 s) and its group_wait
n=$(am_firing pair)
log "firing notifications for job pair: $n (culprit rank $rank)"
((n == 1)) || fail "want exactly one firing notification, got $n: $(cat "$T/notes.jsonl")"
grep -q "\"rank\": \"$rank\"" "$T/notes.jsonl" || fail "the notification does not name rank $rank"
echo "alertmanager cluster ok: an HA pair of collectors, one notification"
