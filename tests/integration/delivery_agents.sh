#!/usr/bin/env bash
# Real delivery, real agents: per case, 8 argus-agent processes (one node
# each: its own node id, spool and HTTP port; default settings except what
# replay needs; eBPF probes off) replay the step records of 8 ranks each
# (64 ranks, argus-sim --record --record_split) at 10 steps/s into one
# argus-collector at default settings, shared by all cases (one job each).
#   healthy    no fault                         -> zero reports
#   straggler  compute-straggler scenario        -> the culprit paged as
#              CAUSE_COMPUTE, nobody else paged
#   spread     agents started 0-5 s apart        -> zero reports
#   stall5     one agent SIGSTOPped 5 s          -> zero reports
#   stall30    one agent SIGSTOPped 30 s         -> at most one finding, about
#              its node, none for its ranks after it resumed
#   cut30      one agent's link cut 30 s (tcp_proxy.py stopped and started
#              again): it spools and replays; every record stored once, at
#              most one finding, about its node, none for its ranks after
#   (stall30 and cut30: the node's records come back beyond the late
#   horizon, so argus may also say it was blind to them: ArgusBlind)
#   (delivery_check.py judges the reports and says why on failure)
# Cases run side by side; DELIVERY_CASES="healthy stall5" runs a subset.
# Every wait is for a condition (a step stored by all 64 ranks) with a
# generous deadline, not a fixed sleep, except the injected faults.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
CASES=${DELIVERY_CASES:-healthy straggler spread stall5 stall30 cut30}
RATE=10      # steps per second per rank, about the scenario's own step time
NODES=8
WORLD=64

# kill what the cases (subshells) started, SIGSTOPped ones included
trap 'for p in $(cat "$T"/*/pids 2>/dev/null); do kill -CONT "$p"; kill -9 "$p"; done 2>/dev/null
      cleanup' EXIT

# record CASE SCENARIO STEPS: $T/CASE/rec.node0..7 and the truth line
record() {
    mkdir -p "$T/$1"
    "$BIN/argus-sim" --job "$1" --scenario "$2" --ranks $WORLD --ranks_per_node $((WORLD / NODES)) \
        --tp 2 --steps "$3" --seed 11 --record "$T/$1/rec" --record_split >"$T/$1/truth.json" \
        || fail "$1: argus-sim --record: $(cat "$T/$1/truth.json")"
}

# start_node CASE I [COLLECTOR_ADDRESS]: the agent of node I; its HTTP port in
# $T/CASE/port.I, its pid in $T/CASE/pid.I and $T/CASE/pids
start_node() {
    local c=$1 i=$2 addr=${3:-127.0.0.1:$CPORT} port
    port=$(free_port)
    "$BIN/argus-agent" --collector.address "$addr" --grpc.plaintext true --spool.dir "$T/$c/spool.$i" \
        --http.listen "127.0.0.1:$port" --node.name "$(printf node%03d "$i")" \
        --node.agent_id "$c-node$i" --cupti.socket "$T/$c/cupti.$i.sock" --probes.enable "" \
        --replay.records "$T/$c/rec.node$i" --replay.rate $RATE >>"$T/$c/agent.$i.log" 2>&1 &
    echo $! >"$T/$c/pid.$i"
    echo $! >>"$T/$c/pids"
    disown $! # killed by stop_nodes or the exit trap, without a job notice
    echo "$port" >"$T/$c/port.$i"
}

wait_nodes() { # CASE: every agent of the case answers on its HTTP port
    local i
    for ((i = 0; i < NODES; i++)); do
        wait_every "$1: agent $i on :$(cat "$T/$1/port.$i")" 20 0.5 \
            curl -sf "127.0.0.1:$(cat "$T/$1/port.$i")/healthz"
    done
}

# start_nodes CASE [SPREAD_S]: all 8 agents, agent i started i * SPREAD_S / 7
# seconds after the first (by the clock, whatever a start takes)
start_nodes() {
    local i t0 due
    t0=$(date +%s%N)
    for ((i = 0; i < NODES; i++)); do
        due=$((t0 + i * ${2:-0} * 1000000000 / (NODES - 1)))
        sleep "$(awk -v d=$((due - $(date +%s%N))) 'BEGIN {print (d > 0 ? d / 1e9 : 0)}')"
        start_node "$1" "$i"
    done
    log "$1: $NODES agents started over $((($(date +%s%N) - t0) / 1000000)) ms"
    wait_nodes "$1"
}

# ranks_at CASE STEP: how many ranks' records of STEP the collector stores
ranks_at() {
    ctl --json steps --job "$1" --from "$2" --to "$2" --limit 1000 2>/dev/null \
        | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("steps", [])))' \
            2>/dev/null || echo 0
}
all_ranks_at() { [[ $(ranks_at "$1" "$2") == "$WORLD" ]]; }

# newest_step CASE: the newest step every rank delivered (from the job's last step)
newest_step() {
    ctl --json jobs | /usr/bin/python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["job"] == sys.argv[1]:
        print(int(j.get("last_step", 0)))' "$1"
}

# settle CASE: let diagnosis catch up with what is stored: where the collector
# exports a per-job diagnosis lag, wait until it is under a second; else 3 s.
settle() {
    local lag
    lag=$(curl -s "127.0.0.1:$HPORT/metrics" | awk -v j="job=\"$1\"" \
        '$1 ~ /^argus_diag_lag_seconds/ && index($1, j) {print $2}')
    if [[ -n $lag ]]; then
        wait_every "$1: diagnosis to catch up" 60 1 bash -c "curl -s 127.0.0.1:$HPORT/metrics | awk \
            -v j='job=\"$1\"' '\$1 ~ /^argus_diag_lag_seconds/ && index(\$1, j) && \$2 < 1 {ok=1} END {exit !ok}'"
    else
        sleep 3
    fi
}

# judge CASE EXPECT [delivery_check.py options]
judge() {
    local c=$1 e=$2; shift 2
    ctl --json stragglers --job "$c" >"$T/$c/reports.json" || fail "$c: argusctl stragglers"
    curl -s "127.0.0.1:$HPORT/metrics" >"$T/$c/metrics.txt"
    /usr/bin/python3 "$HERE/delivery_check.py" "$c" "$T/$c/reports.json" --expect "$e" \
        --metrics "$T/$c/metrics.txt" "$@" || fail "$c: $e expected"
}

stop_nodes() { # CASE: the agents go; the job's diagnosis is judged already
    local p
    for p in $(cat "$T/$1/pids"); do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
    rm -f "$T/$1"/rec.node*
}

case_healthy() {
    record healthy healthy 600
    start_nodes healthy
    wait_every "healthy: step 250 from every rank" 120 1 all_ranks_at healthy 250
    settle healthy
    judge healthy none
    stop_nodes healthy
}

case_spread() {
    record spread healthy 600
    start_nodes spread 5
    wait_every "spread: step 200 from every rank" 120 1 all_ranks_at spread 200
    settle spread
    judge spread none
    stop_nodes spread
}

case_straggler() {
    record straggler compute-straggler 600
    start_nodes straggler
    wait_every "straggler: step 150 from every rank" 120 1 all_ranks_at straggler 150
    settle straggler
    judge straggler straggler --truth "$T/straggler/truth.json"
    stop_nodes straggler
}

# stall CASE SECONDS: node 5 SIGSTOPped at step 50 for SECONDS
stall() {
    local c=$1 s=$2 pid resumed at
    record "$c" healthy $((400 + s * RATE))
    start_nodes "$c"
    wait_every "$c: step 50 from every rank" 120 1 all_ranks_at "$c" 50
    pid=$(cat "$T/$c/pid.5")
    kill -STOP "$pid"
    log "$c: node 5 stopped"
    sleep "$s"
    resumed=$(date +%s%N)
    kill -CONT "$pid"
    at=$(newest_step "$c")
    log "$c: node 5 resumed at step $at"
    wait_every "$c: step $((at + 100)) from every rank" 120 1 all_ranks_at "$c" $((at + 100))
    settle "$c"
    if ((s < 10)); then
        judge "$c" none
    else
        # a finding the stall itself raised may be stored just after the
        # resume; what counts is nothing new about its ranks once it is back
        judge "$c" quiet-node --node node005 --ranks 40-47 --after $((resumed + 5000000000))
    fi
    stop_nodes "$c"
}
case_stall5() { stall stall5 5; }
case_stall30() { stall stall30 30; }

spool_empty() { [[ $(metric "$1" argus_agent_spool_records) == 0 ]]; } # AGENT_HTTP_PORT

# cut30: node 2 reaches the collector through tcp_proxy.py, stopped at step
# 50 for 30 s and started again on the same port
case_cut30() {
    local c=cut30 pport port2 restored replayed at pid i
    record $c healthy 800
    pport=$(free_port)
    /usr/bin/python3 "$HERE/tcp_proxy.py" "$pport" "127.0.0.1:$CPORT" >>"$T/$c/proxy.log" 2>&1 &
    pid=$!
    echo $pid >>"$T/$c/pids"
    disown $pid
    for ((i = 0; i < NODES; i++)); do
        if ((i == 2)); then start_node $c $i "127.0.0.1:$pport"; else start_node $c $i; fi
    done
    wait_nodes $c
    wait_every "$c: step 50 from every rank" 120 1 all_ranks_at $c 50
    kill -TERM $pid
    log "$c: link of node 2 cut"
    sleep 30
    /usr/bin/python3 "$HERE/tcp_proxy.py" "$pport" "127.0.0.1:$CPORT" >>"$T/$c/proxy.log" 2>&1 &
    echo $! >>"$T/$c/pids"
    disown $!
    restored=$(date +%s%N)
    at=$(newest_step $c)
    port2=$(cat "$T/$c/port.2")
    log "$c: link of node 2 back at step $at, node 2 spooled \
$(metric "$port2" argus_agent_spool_records) batches"
    wait_every "$c: node 2's spool to drain" 60 0.5 spool_empty "$port2"
    replayed=$(date +%s%N)
    log "$c: node 2 replayed its spool $(((replayed - restored) / 1000000)) ms after the link came back"
    wait_every "$c: step $((at + 100)) from every rank" 120 1 all_ranks_at $c $((at + 100))
    settle $c
    # every record of node 2 stored once, from step 0 on, no hole: what it
    # spooled during the cut was replayed (counted with the agents stopped)
    stop_nodes $c
    read -r kmin kmax total lo < <(check_job $c $WORLD) || fail "$c: stored records"
    log "$c: stored per rank $kmin..$kmax steps, $total rank-steps, first step $lo"
    [[ $lo == 0 ]] || fail "$c: the steps before the cut are missing (first step $lo)"
    ((kmin >= at + 100)) || fail "$c: a rank has only $kmin steps, expected >= $((at + 100))"
    judge $c quiet-node --node node002 --ranks 16-23 --after "$replayed"
}

for c in $CASES; do
    declare -F "case_$c" >/dev/null || fail "unknown case '$c' (one of: healthy straggler spread \
stall5 stall30 cut30)"
done
start_collector "$T/store"
declare -A running
for c in $CASES; do
    ("case_$c") >"$T/$c.out" 2>&1 &
    running[$c]=$!
done
failed=()
for c in $CASES; do
    wait "${running[$c]}" || failed+=("$c")
    sed "s/^/[$c] /" "$T/$c.out"
done
curl -s "127.0.0.1:$HPORT/metrics" >"$T/metrics.txt"
grep -E '^argus_(diag|ingest_rank_steps|ingest_rejects)' "$T/metrics.txt" | grep -v ' 0$' \
    | sed 's/^/collector: /'
((${#failed[@]} == 0)) || fail "cases failed: ${failed[*]}"
# real agents at default settings are never refused
rejects=$(awk '$1 ~ /^argus_ingest_rejects_total/ {n += $2} END {print n + 0}' "$T/metrics.txt")
((rejects == 0)) || fail "the collector rejected $rejects batches of the agents"
echo "delivery with real agents ok: $CASES"
