#!/usr/bin/env bash
# Discovery through the whole agent: processes with and without RANK in their
# environment; only the ranks are tracked, with the right job, rank and
# coordinates, their resources reach the collector (argusctl ranks), and an
# exit is noticed.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
spawn() { env -i PATH=/usr/bin:/bin "$@" sleep 60 & PIDS+=($!); }
spawn RANK=0 LOCAL_RANK=0 WORLD_SIZE=4 ARGUS_JOB=disc ARGUS_TP_SIZE=2 ARGUS_PP_SIZE=2
spawn RANK=1 LOCAL_RANK=1 WORLD_SIZE=4 ARGUS_JOB=disc ARGUS_TP_SIZE=2 ARGUS_PP_SIZE=2
spawn RANK=3 LOCAL_RANK=3 WORLD_SIZE=4 ARGUS_JOB=disc ARGUS_TP_SIZE=2 ARGUS_PP_SIZE=2
victim=$!
spawn ARGUS_JOB=disc                      # no RANK: not a rank
spawn RANK=9 WORLD_SIZE=4 ARGUS_JOB=disc  # rank >= world size: not a rank
start_agent "$T/spool" --discovery.scan_interval 300ms --batch.max_age 200ms
wait_for "3 ranks tracked" 10 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_ranks\"{print \$2}') == 3 ]]"
wait_for "ranks at the collector" 10 bash -c "$BIN/argusctl --collector 127.0.0.1:$CPORT ranks --job disc | grep -q '^ *3 '"
ctl ranks --job disc | tee "$T/ranks.txt"
# RANK LOCAL WORLD NODE GPU PID DP TP PP EP: rank 3 of tp=2, pp=2 is tp 1, dp 0, pp 1
awk '$1 == 3 && $3 == 4 && $4 == "testnode" && $8 == 1 && $7 == 0 && $9 == 1' "$T/ranks.txt" \
    | grep -q . || fail "rank 3 coordinates wrong"
[[ $(awk 'NR > 1' "$T/ranks.txt" | wc -l) == 3 ]] || fail "expected exactly 3 ranks"
kill "$victim"
wait_for "the exit to be noticed" 10 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_ranks\"{print \$2}') == 2 ]]"
grep -q "rank 3 of job disc (pid $victim) is gone" "$T/agent.log" || fail "exit not logged"
echo "discovery ok"
