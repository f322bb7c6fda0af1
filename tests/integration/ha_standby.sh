#!/usr/bin/env bash
# Hot standby with real agents (issue 28). Per case three collectors in a
# set and eight argus-agent processes (one node each, default settings but
# for replay: 8 ranks each of a 64-rank job, argus-sim --record --record_split,
# at 10 steps/s) with collector.set = the three. Each batch goes to the job's
# primary and standby (rendezvous placement, argusctl collectors --job), never
# to the third.
#   base     straggler, no collector fault: primary and standby both page
#            the culprit, in reports with the same id; the third holds
#            nothing of the job
#   kill9    straggler, the primary kill -9'd at step 10 (before the onset,
#            step 20): the standby pages the culprit within two diagnosis
#            windows (2 x diag.window steps) of the step the base case's
#            primary did; the primary started again on its store catches up
#            (every record of every rank, once) and pages the culprit too
#   cut      the same with the primary's link black-holed (each collector is
#            reached through tcp_proxy.py; SIGUSR1 at step 10) for about 15 s (the kill9 primary is away as long)
#   healthy  a healthy job, its primary kill -9'd at step 50 and back 20 s
#            later: no page on any collector; both hold every record
# Every collector sends alerts to one two-node Alertmanager cluster
# (lib.sh start_am_cluster): exactly one firing ArgusStraggler notification
# per straggler job, whichever collectors fired, and none for the healthy one
# (a returning primary may add an ArgusBlind warning for its catch-up).
# HA_CASES="base kill9" runs a subset.
# test-cpu: all: 32 agents and 12 collectors side by side
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
CASES=${HA_CASES:-base kill9 cut healthy}
RATE=10 NODES=8 WORLD=64 WINDOW=40 ONSET=20
RUN=-$$ # job CASE$RUN: an agent left over from an earlier run cannot add to it

trap 'for p in $(cat "$T"/*/pids 2>/dev/null); do kill -CONT "$p"; kill -9 "$p"; done 2>/dev/null
      cleanup' EXIT

# record CASE SCENARIO STEPS: $T/CASE/rec.node0..7 and the truth line
record() {
    "$BIN/argus-sim" --job "$1$RUN" --scenario "$2" --ranks $WORLD --ranks_per_node $((WORLD / NODES)) \
        --tp 2 --steps "$3" --seed 11 --onset $ONSET --record "$T/$1/rec" --record_split \
        >"$T/$1/truth.json" || fail "$1: argus-sim --record: $(cat "$T/$1/truth.json")"
    echo "$3" >"$T/$1/steps"
}

bg() { # CASE LOG CMD...: a background process of the case (output appended
    # to LOG), killed at exit; prints its pid
    local c=$1 out=$2; shift 2
    "$@" >>"$out" 2>&1 &
    echo $! >>"$T/$c/pids"
    echo $!
    disown $!
}

# collector CASE I: collector I of the case on ports $T/CASE/cport.I, hport.I
collector() {
    local c=$1 i=$2 cp hp
    cp=$(cat "$T/$c/cport.$i") hp=$(cat "$T/$c/hport.$i")
    bg "$c" "$T/$c/collector.$i.log" "$BIN/argus-collector" --grpc.listen "127.0.0.1:$cp" --http.listen "127.0.0.1:$hp" \
        --store.dir "$T/$c/store.$i" --grpc.plaintext true --alerts.alertmanager "$AM_SINK" \
        --alerts.backoff_max 1s --cluster.set "$(cat "$T/$c/set")" \
        --cluster.self "$(cat "$T/$c/member.$i")" >"$T/$c/cpid.$i"
    wait_for "$c: collector $i" 10 "$BIN/argusctl" --collector "127.0.0.1:$cp" --timeout 1s jobs
}

# setup CASE [proxied]: three collectors (each behind tcp_proxy.py when
# proxied: the set names the proxies), the set in $T/CASE/set, the job's
# primary and standby indexes in $T/CASE/p and $T/CASE/s
setup() {
    local c=$1 i members=()
    mkdir -p "$T/$c"
    for i in 0 1 2; do
        free_port >"$T/$c/cport.$i"
        free_port >"$T/$c/hport.$i"
        if [[ ${2:-} == proxied ]]; then
            free_port >"$T/$c/pport.$i"
            bg "$c" "$T/$c/proxy.log" /usr/bin/python3 "$HERE/tcp_proxy.py" \
                "$(cat "$T/$c/pport.$i")" "127.0.0.1:$(cat "$T/$c/cport.$i")" >"$T/$c/proxy.$i"
            echo "127.0.0.1:$(cat "$T/$c/pport.$i")" >"$T/$c/member.$i"
        else
            echo "127.0.0.1:$(cat "$T/$c/cport.$i")" >"$T/$c/member.$i"
        fi
        members+=("$(cat "$T/$c/member.$i")")
    done
    (IFS=,; echo "${members[*]}") >"$T/$c/set"
    for i in 0 1 2; do collector "$c" "$i"; done
    read -r p s < <(pair_of "$(cat "$T/$c/set")" "$c$RUN")
    for i in 0 1 2; do
        [[ $(cat "$T/$c/member.$i") == "$p" ]] && echo "$i" >"$T/$c/p"
        [[ $(cat "$T/$c/member.$i") == "$s" ]] && echo "$i" >"$T/$c/s"
    done
    [[ -s $T/$c/p && -s $T/$c/s ]] || fail "$c: placement '$p' '$s' is not in the set"
    log "$c: primary collector $(cat "$T/$c/p") ($p), standby $(cat "$T/$c/s") ($s)"
}

# pair_of SET JOB: the job's primary and standby member names, as argusctl
# places them
pair_of() {
    "$BIN/argusctl" --collectors "$1" --json collectors --job "$2" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["primary"]["name"], d["standby"]["name"])'
}

start_nodes() { # CASE
    local c=$1 i port upid
    for ((i = 0; i < NODES; i++)); do
        port=$(free_port)
        echo "$port" >"$T/$c/port.$i"
        # in a PID namespace of its own (lib.sh isolated): it discovers no
        # rank of the tests beside it, whose jobs would route its batches
        upid=$(bg "$c" "$T/$c/agent.$i.log" isolated "$BIN/argus-agent" --collector.set "$(cat "$T/$c/set")" --grpc.plaintext true \
            --spool.dir "$T/$c/spool.$i" --http.listen "127.0.0.1:$port" \
            --node.name "$(printf node%03d "$i")" --node.agent_id "$c-node$i" \
            --collector.backoff_max 1s --cupti.socket "$T/$c/cupti.$i.sock" --probes.enable "" \
            --replay.records "$T/$c/rec.node$i" --replay.rate $RATE)
        isolated_pid "$upid" >"$T/$c/pid.$i"
        cat "$T/$c/pid.$i" >>"$T/$c/pids" # killed at exit: its namespace ends with it
    done
    for ((i = 0; i < NODES; i++)); do
        wait_every "$c: agent $i" 20 0.5 curl -sf "127.0.0.1:$(cat "$T/$c/port.$i")/healthz"
    done
}

on() { # CASE I CMD...: argusctl against collector I of the case
    local c=$1 i=$2; shift 2
    "$BIN/argusctl" --collector "127.0.0.1:$(cat "$T/$c/cport.$i")" --timeout 3s "$@"
}

ranks_at() { # CASE I STEP: ranks whose STEP collector I stores
    on "$1" "$2" --json steps --job "$1$RUN" --from "$3" --to "$3" --limit 1000 2>/dev/null \
        | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("steps", [])))' \
            2>/dev/null || echo 0
}
all_ranks_at() { [[ $(ranks_at "$@") == "$WORLD" ]]; }
both_at() { # CASE STEP: the primary and the standby hold STEP of every rank
    all_ranks_at "$1" "$(cat "$T/$1/p")" "$2" && all_ranks_at "$1" "$(cat "$T/$1/s")" "$2"
}
# caught_up CASE: the primary holds step 1 (0 means every step to argusctl) and the standby's newest step
# but 20 of every rank
caught_up() {
    local p
    p=$(cat "$T/$1/p")
    all_ranks_at "$1" "$p" 1 && all_ranks_at "$1" "$p" $(($(newest_step "$1" "$(cat "$T/$1/s")") - 20))
}

newest_step() { # CASE I: the job's last step on collector I
    on "$1" "$2" --json jobs | /usr/bin/python3 -c '
import json, sys
print(max([int(j.get("last_step", 0)) for j in json.load(sys.stdin)["jobs"] if j["job"] == sys.argv[1]] + [0]))' "$1$RUN"
}

# first_page CASE I: the to_step of collector I's first report paging the
# truth's culprit ("" when none)
first_page() {
    on "$1" "$2" --json stragglers --job "$1$RUN" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
truth = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
want = {int(r) for r in truth["culprits"]}
steps = [int(r.get("to_step", 0)) for r in json.load(sys.stdin).get("reports", [])
         for s in r.get("suspects", []) if int(s.get("rank", -1)) in want]
print(min(steps) if steps else "")' "$T/$1/truth.json"
}
paged() { [[ -n $(first_page "$@") ]]; }

judge() { # CASE I EXPECT: delivery_check.py on collector I's reports
    on "$1" "$2" --json stragglers --job "$1$RUN" >"$T/$1/reports.$2.json" || fail "$1: stragglers"
    /usr/bin/python3 "$HERE/delivery_check.py" "$1" "$T/$1/reports.$2.json" --expect "$3" \
        --truth "$T/$1/truth.json" || fail "$1: collector $2: $3 expected"
}

# holds_all CASE I: collector I holds every rank's steps 0..K-1 once
# (lib.sh check_job)
holds_all() {
    local c=$1 i=$2 kmin kmax total lo
    read -r kmin kmax total lo < <(CPORT=$(cat "$T/$c/cport.$i") check_job "$c$RUN" $WORLD) \
        || fail "$c: collector $i: stored records"
    log "$c: collector $i holds per rank $kmin..$kmax steps from step $lo, $total in all"
    [[ $lo == 0 ]] || fail "$c: collector $i misses the first steps (first $lo)"
}

# the third collector holds nothing of the job
third_empty() {
    local c=$1 i
    for i in 0 1 2; do
        [[ $i == $(cat "$T/$c/p") || $i == $(cat "$T/$c/s") ]] && continue
        [[ $(newest_step "$c" "$i") == 0 ]] || fail "$c: collector $i, neither primary nor standby, holds the job"
    done
}

# stop_nodes CASE: the agents stopped by SIGTERM (each sends what it
# spooled to every collector it reaches before it exits), then the
# primary and the standby hold the same records, every rank from step 0
# with no hole and none twice, and the third nothing of the job
stop_nodes() {
    local c=$1 i p s
    # after the replays ended (each agent ends its ranks, cleanly, after
    # their last record): agents stopped while their ranks run would end
    # nothing, and the ranks of the job would be left running
    wait_every "$c: the job to end" 120 1 job_ended "$c" "$(cat "$T/$c/s")"
    for ((i = 0; i < NODES; i++)); do kill -TERM "$(cat "$T/$c/pid.$i")" 2>/dev/null; done
    for ((i = 0; i < NODES; i++)); do
        wait_every "$c: agent $i to stop" 30 0.5 bash -c "! kill -0 $(cat "$T/$c/pid.$i") 2>/dev/null"
    done
    p=$(cat "$T/$c/p") s=$(cat "$T/$c/s")
    holds_all "$c" "$p"
    holds_all "$c" "$s"
    [[ $(rank_steps "$c" "$p") == "$(rank_steps "$c" "$s")" ]] \
        || fail "$c: the primary holds $(rank_steps "$c" "$p") rank-steps, the standby $(rank_steps "$c" "$s")"
    third_empty "$c"
    # both ended the job with its last step, after every rank's last record,
    # and neither took a rank's end for a death (FAILED)
    for i in "$p" "$s"; do
        job_ended "$c" "$i" || fail "$c: collector $i: the job did not end cleanly: $(on "$c" "$i" jobs)"
        [[ $(newest_step "$c" "$i") == $(($(cat "$T/$c/steps") - 1)) ]] \
            || fail "$c: collector $i: last step $(newest_step "$c" "$i"), want $(($(cat "$T/$c/steps") - 1))"
    done
}

job_ended() { # CASE I: collector I says the job ended
    on "$1" "$2" --json jobs | /usr/bin/python3 -c '
import json, sys
sys.exit(0 if any(j["job"] == sys.argv[1] and j.get("state") == "JOB_STATE_ENDED"
                  for j in json.load(sys.stdin)["jobs"]) else 1)' "$1$RUN"
}

rank_steps() { # CASE I: the job's rank-steps stored on collector I
    on "$1" "$2" --json jobs | /usr/bin/python3 -c '
import json, sys
print(sum(int(j.get("rank_steps", 0)) for j in json.load(sys.stdin)["jobs"] if j["job"] == sys.argv[1]))' "$1$RUN"
}

case_base() {
    local c=base p s
    setup $c
    record $c compute-straggler 300
    start_nodes $c
    p=$(cat "$T/$c/p") s=$(cat "$T/$c/s")
    wait_every "$c: the primary pages the culprit" 90 1 paged $c "$p"
    wait_every "$c: the standby pages the culprit" 30 1 paged $c "$s"
    first_page $c "$p" >"$T/$c/detect_step"
    log "$c: primary paged at step $(cat "$T/$c/detect_step"), standby at step $(first_page $c "$s")"
    wait_every "$c: step 200 on both" 90 1 both_at $c 200
    judge $c "$p" straggler
    judge $c "$s" straggler
    # the same records give the same reports on both: ids and steps
    /usr/bin/python3 - "$T/$c/reports.$p.json" "$T/$c/reports.$s.json" <<'PY' || fail "$c: the pair's reports differ"
import json, sys
a, b = ({r["id"]: r.get("to_step") for r in json.load(open(f)).get("reports", [])} for f in sys.argv[1:])
common = set(a) & set(b)
print("reports: primary %d, standby %d, same id %d" % (len(a), len(b), len(common)))
sys.exit(0 if common and min(a) in common else 1)
PY
    stop_nodes $c
}

# fail_primary CASE kill9|cut AT_STEP BACK_AFTER_S: the primary's fault
fail_primary() {
    local c=$1 how=$2 p
    p=$(cat "$T/$c/p")
    wait_every "$c: step $3 on the standby" 60 0.5 all_ranks_at $c "$(cat "$T/$c/s")" "$3"
    if [[ $how == kill9 ]]; then
        kill -9 "$(cat "$T/$c/cpid.$p")"
    else
        kill -USR1 "$(cat "$T/$c/proxy.$p")"
    fi
    log "$c: primary collector $p: $how at step $(newest_step $c "$(cat "$T/$c/s")")"
}

restore_primary() { # CASE kill9|cut
    local c=$1 p
    p=$(cat "$T/$c/p")
    if [[ $2 == kill9 ]]; then
        collector $c "$p"
    else
        kill -USR2 "$(cat "$T/$c/proxy.$p")"
    fi
    log "$c: primary collector $p back at step $(newest_step $c "$(cat "$T/$c/s")")"
}

straggler_fault() { # CASE kill9|cut
    local c=$1 how=$2 p s at base
    setup $c "$([[ $how == cut ]] && echo proxied)"
    record $c compute-straggler 400
    start_nodes $c
    p=$(cat "$T/$c/p") s=$(cat "$T/$c/s")
    fail_primary $c "$how" 10
    wait_every "$c: the standby pages the culprit" 90 1 paged $c "$s"
    at=$(first_page $c "$s")
    wait_for "the base case's detection step" 300 test -s "$T/base/detect_step"
    base=$(cat "$T/base/detect_step")
    log "$c: standby paged at step $at; the base case's primary at step $base"
    ((at <= base + 2 * WINDOW)) || fail "$c: standby paged at step $at, over two windows after $base"
    sleep 10 # the primary stays away for about 15 s in all
    restore_primary $c "$how"
    wait_every "$c: the primary catches up" 90 1 caught_up $c
    wait_every "$c: the primary pages the culprit again" 90 1 paged $c "$p"
    judge $c "$s" straggler
    stop_nodes $c
}
case_kill9() { straggler_fault kill9 kill9; }
case_cut() { straggler_fault cut cut; }

case_healthy() {
    local c=healthy p s i
    setup $c
    record $c healthy 400
    start_nodes $c
    p=$(cat "$T/$c/p") s=$(cat "$T/$c/s")
    fail_primary $c kill9 50
    sleep 20
    restore_primary $c kill9
    wait_every "$c: step 300 on both" 120 1 both_at $c 300
    sleep 5 # diagnosis of what arrived
    judge $c "$p" none
    judge $c "$s" none
    stop_nodes $c
}

for c in $CASES; do
    declare -F "case_$c" >/dev/null || fail "unknown case '$c' (one of: base kill9 cut healthy)"
done
start_am_cluster
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
((${#failed[@]} == 0)) || fail "cases failed: ${failed[*]}"
sleep 12 # past the second Alertmanager's peer timeout and group_wait
# straggler pages: a returning primary that shed records of its catch-up
# may also say so (ArgusBlind, severity warning, for whoever runs argus:
# docs/operations.md); that is not a second page about the job's ranks
for c in $CASES; do
    n=$(am_firing "$c$RUN" ArgusStraggler)
    log "$c: $n firing notification(s), ArgusBlind $(am_firing "$c$RUN" ArgusBlind)"
    if [[ $c == healthy ]]; then
        ((n == 0)) || fail "healthy: $n notifications"
    elif ((n != 1)); then
        grep -h "\"$c$RUN\"" "$T/notes.jsonl" | head -c 4000
        fail "$c: want exactly one firing notification, got $n"
    fi
done
echo "hot standby ok: $CASES"
