#!/usr/bin/env bash
# make bench-detect: every fault scenario x delivery condition x seed at each
# scale, through the real protocol into one real collector at its DEFAULT
# settings. Delivery conditions (argus-sim --delivery and friends):
#   lockstep     every stream within one step of the others (the old sim)
#   realistic    batches by age like the agent (1 s) + per-stream delay/jitter
#   stallN       realistic + node FAULT_NODE's stream paused N s at the onset
#   outageN      realistic + node FAULT_NODE's stream cut N s at the onset,
#                its spool replayed after
#   spreadN      realistic + agents starting over N s
#   clockN       realistic + node FAULT_NODE's clock off by +N s (odd seeds)
#                or -N s (even seeds)
#   overloadF    realistic at F x the collector's capacity (measured once
#                per scale with a full-speed run of plain records)
# The runs go back to back; WAIT s after the last one (the default step
# timeout is 10 s) every job's reports are read and scored by
# tests/bench/detect_score.py: precision/recall of the paged (rank, cause),
# pages, false SILENT pages (ranks whose records were all delivered within
# SILENCE s, from each run's send log), job-level findings, time from onset
# to the first correct page. One table, a row per scale x scenario x delivery.
#   SCALES="1024 10240" SEEDS=5 BIG_SEEDS=2 STEPS=70 tests/bench/detect.sh
#   SCALES=1024 SEEDS=1 SCENARIOS="healthy compute-straggler" DELIVERY="lockstep realistic" ...
# The liveness classes (hang, death, checkpoint: the ranks stop at the onset,
# their agents send statuses) run only under the realistic delivery:
#   SCALES="1024 10240" SEEDS=2 SCENARIOS="hang death checkpoint" DELIVERY=realistic ...
# COLLECTOR_ARGS adds collector flags (experiments: the table is then not
# the default settings'); KEEP=1 keeps the store, logs and reports.
# SEEDS is the seed count below 10,240 ranks, BIG_SEEDS (<= SEEDS) from there.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${ARGUS_BUILD:-$REPO/build}/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the demo's collector is plaintext on loopback
T=$(mktemp -d /tmp/argus-detect.XXXXXX)
col=
trap '[[ -n $col ]] && { kill -9 $col; wait $col; } 2>/dev/null; [[ -n ${KEEP:-} ]] || rm -rf "$T"' EXIT
SEEDS=${SEEDS:-5}
BIG_SEEDS=${BIG_SEEDS:-2}
SCALES=${SCALES:-1024 10240}
STEPS=${STEPS:-70}
ONSET=${ONSET:-20}
WAIT=${WAIT:-15}
SILENCE=${SILENCE:-30}
FAULT_NODE=${FAULT_NODE:-1}
SCENARIOS=${SCENARIOS:-healthy compute-straggler link-degraded-group masked-straggler pipeline-stage-straggler jit-stalls data-skew imbalance everyone-slower hang death checkpoint}
DELIVERY=${DELIVERY:-lockstep realistic stall5 outage30 spread5 clock2 overload2}
port=$((21000 + RANDOM % 9000))
hport=$((port + 1))
# shellcheck disable=SC2086 # COLLECTOR_ARGS: words
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$port" --grpc.plaintext true --http.listen "127.0.0.1:$hport" \
    --store.dir "$T/store" ${COLLECTOR_ARGS:-} >"$T/collector.log" 2>&1 &
col=$!
for _ in $(seq 100); do
    "$BIN/argusctl" --collector "127.0.0.1:$port" --timeout 1s jobs >/dev/null 2>&1 && break
    sleep 0.1
done
mkdir -p "$T/runs"
: >"$T/manifest.jsonl"

capacity() { # ranks: rank-steps/s the collector acks at full speed (plain records)
    local steps=$((200000 / $1 > 10 ? 200000 / $1 : 10))
    "$BIN/argus-sim" --collector "127.0.0.1:$port" --job "capacity-$1" --ranks "$1" \
        --steps "$steps" --rate 0 --pregen --steps_per_batch 4 --delivery lockstep \
        --agent_prefix capacity- --timeout 600s >"$T/capacity.json" || return 1
    /usr/bin/python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["rank_steps_per_s"])' \
        "$T/capacity.json"
}

delivery_flags() { # delivery rate seed nagents capacity: argus-sim flags
    local d=$1 rate=$2 seed=$3 node=$((FAULT_NODE < $4 ? FAULT_NODE : $4 - 1)) at n
    at=$(/usr/bin/python3 -c "print('%.3f' % ($ONSET / $rate))")
    n=${d//[a-z]/}
    case $d in
    lockstep) echo --delivery lockstep --steps_per_batch 2 ;;
    realistic) echo --delivery realistic ;;
    stall[0-9]*) echo --delivery realistic --stall "$node:$at:$n" ;;
    outage[0-9]*) echo --delivery realistic --outage "$node:$at:$n" ;;
    spread[0-9]*) echo --delivery realistic --start_spread "${n}s" ;;
    clock[0-9]*) echo --delivery realistic --clock_offset "$node:$((seed % 2 ? n : -n))" ;;
    overload[0-9]*) echo --delivery realistic --overload "$n" --capacity "$5" ;;
    *) return 1 ;;
    esac
}

for ranks in $SCALES; do
    # keep the offered load near 30k rank-steps/s so sender and collector share 2 cores
    rate=$(/usr/bin/python3 -c "print(max(1.0, min(50.0, 30000.0 / $ranks)))")
    # the run's length, a 30 s outage and its replay, and room: a sim whose
    # last ack never comes gives up here, not after 15 minutes
    tmo=$(/usr/bin/python3 -c "print(int($STEPS / $rate + ${SIM_SLACK:-180}))")
    seeds=$SEEDS
    ((ranks >= 10240 && BIG_SEEDS < SEEDS)) && seeds=$BIG_SEEDS
    cap=0
    if [[ " $DELIVERY " == *" overload"* ]]; then
        cap=$(capacity "$ranks") || { echo "capacity run at $ranks ranks failed" >&2; cap=30000; }
        echo "collector capacity at $ranks ranks: $cap rank-steps/s" >&2
    fi
    for scn in $SCENARIOS; do
        extra=()
        [[ $scn == pipeline-stage-straggler ]] && extra=(--pp 4)
        [[ $scn == hang || $scn == checkpoint ]] && extra=(--liveness_for "${LIVENESS_FOR:-60}s")
        for d in $DELIVERY; do
            [[ $scn =~ ^(hang|death|checkpoint)$ && $d != realistic ]] && continue
            for seed in $(seq 1 "$seeds"); do
                job="$scn-$d-$ranks-$seed"
                flags=$(delivery_flags "$d" "$rate" "$seed" $(((ranks + 7) / 8)) "$cap") \
                    || { echo "unknown delivery condition '$d'" >&2; exit 2; }
                # shellcheck disable=SC2086
                "$BIN/argus-sim" --collector "127.0.0.1:$port" --job "$job" --scenario "$scn" \
                    --ranks "$ranks" --tp 8 --steps "$STEPS" --rate "$rate" --seed "$seed" \
                    --onset "$ONSET" --timeout "${tmo}s" --send_log "$T/runs/$job.log" $flags \
                    "${extra[@]}" >"$T/runs/$job.json" || echo "  $job: sim incomplete" >&2
                printf '{"job": "%s", "scenario": "%s", "ranks": %d, "seed": %d, "delivery": "%s", "sim": "%s", "log": "%s", "rep": "%s"}\n' \
                    "$job" "$scn" "$ranks" "$seed" "$d" "$T/runs/$job.json" "$T/runs/$job.log" \
                    "$T/runs/$job.rep" >>"$T/manifest.jsonl"
            done
        done
    done
done
sleep "$WAIT" # the default step timeout and a tick: every job's last steps are closed
/usr/bin/python3 -c 'import json,sys; [print(json.loads(l)["job"]) for l in open(sys.argv[1])]' \
    "$T/manifest.jsonl" | while read -r job; do
    "$BIN/argusctl" --collector "127.0.0.1:$port" --json --limit 100000 stragglers --job "$job" \
        >"$T/runs/$job.rep" 2>/dev/null || echo '{"reports": []}' >"$T/runs/$job.rep"
done
/usr/bin/python3 "$REPO/tests/bench/detect_score.py" "$T/manifest.jsonl" "$SILENCE"
curl -s "127.0.0.1:$hport/metrics" | awk '$1 == "argus_diag_step_close_seconds_max" {
    printf "slowest diagnosis of one closed step: %.1f ms\n", $2 * 1e3 }
    $1 ~ /^argus_diag_(queue_dropped|dropped_from_diagnosis|steps_closed|silent_findings|late_rec|amended)/ { print }'
awk '$1 == "VmHWM:" { printf "collector peak RSS (VmHWM): %.0f MiB\n", $2 / 1024 }' \
    "/proc/$col/status"
