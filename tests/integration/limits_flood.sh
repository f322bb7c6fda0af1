#!/usr/bin/env bash
# Issue 15, bounded by construction, against the real collector over gRPC:
#  - four batches declaring a world of 65,536 for new jobs, two of them from
#    rank 65,535, are harmless: acked, the collector's peak RSS grows by less
#    than 64 MiB (~360 MiB once, ~1.6 GB in issue 15; two of rank 65,535 took
#    390 MB in issue 33) and they are charged one rank each;
#  - a flood of new jobs stops at limits.max_jobs with RESOURCE_EXHAUSTED and a
#    message naming the key, counted in argus_limit_rejections_total{limit="jobs"};
#    an agent of a job admitted before keeps being acked;
#  - step 2^64-1 and a jump of 2^40 are refused with INVALID_ARGUMENT, counted;
#  - a second collector with a small limits.job_memory refuses new jobs at the
#    budget, and /metrics shows the charge within it.
source "$(dirname "$0")/lib.sh"
FLOOD=${ARGUS_BUILD:-$REPO/build}/tests/limits/limits_flood
[[ -x $FLOOD ]] || fail "$FLOOD not built (make all)"

flood() { "$FLOOD" --collector "127.0.0.1:$CPORT" "$@"; }
hwm_kib() { awk '/VmHWM/ {print $2}' "/proc/$COLLECTOR_PID/status"; }
# labelled PORT NAME LABEL: the value of NAME{LABEL}.
labelled() { curl -s "127.0.0.1:$1/metrics" | awk -v m="$2{$3}" '$1 == m {print $2}'; }
expect_json() { # FILE KEY VALUE
    local got
    got=$(json_get "$1" "$2")
    [[ $got == "$3" ]] || fail "$2 is $got, want $3: $(cat "$1")"
}

log "collector with limits.max_jobs 300"
start_collector "$T/store" --limits.max_jobs 300
flood --jobs 1 --prefix steady- --agent steady >"$T/steady1.json" || fail "steady agent"
expect_json "$T/steady1.json" acked 1

before=$(hwm_kib)
flood --jobs 2 --world 65536 --prefix world- --agent world >"$T/world.json" || fail "world batches"
expect_json "$T/world.json" acked 2
flood --jobs 2 --world 65536 --rank 65535 --prefix world-high- --agent world-high \
    >"$T/high.json" || fail "rank 65535 batches"
expect_json "$T/high.json" acked 2
wait_for "the world jobs under diagnosis" 30 \
    bash -c "[[ \$(curl -s 127.0.0.1:$HPORT/metrics | awk '\$1 == \"argus_diag_fed_batches_total\" {print \$2}') -ge 5 ]]"
after=$(hwm_kib)
log "peak RSS ${before} KiB -> ${after} KiB after four world_size=65536 batches (two of rank 65535)"
((after - before < 65536)) || fail "four world_size=65536 batches took $(((after - before) / 1024)) MiB"
# one rank each, whatever its number: 5 one-rank jobs charged (3.2 GB when the
# charge and diagnosis's arrays followed the highest rank number)
charged=$(metric "$HPORT" argus_limit_job_memory_bytes)
log "charged ${charged} bytes for 5 one-rank jobs"
((charged < 1048576)) || fail "5 one-rank jobs charged $charged bytes"

log "flood of 1,000 new jobs"
flood --jobs 1000 --prefix flood- --agent flood >"$T/flood.json" || fail "flood"
cat "$T/flood.json"
expect_json "$T/flood.json" acked 295 # 300 less steady-0 and world-0..3
expect_json "$T/flood.json" resource_exhausted 705
grep -q 'limit 300 (limits.max_jobs): new job flood-999 refused' "$T/flood.json" ||
    fail "refusal message: $(cat "$T/flood.json")"
[[ $(labelled "$HPORT" argus_limit_rejections_total 'limit="jobs"') == 705 ]] ||
    fail "argus_limit_rejections_total{limit=\"jobs\"} is not 705"
[[ $(metric "$HPORT" argus_limit_jobs) == 300 ]] || fail "argus_limit_jobs is not 300"

log "the steady agent's job is still served"
flood --jobs 1 --prefix steady- --agent steady --epoch 2 --step 2 >"$T/steady2.json" ||
    fail "steady agent"
expect_json "$T/steady2.json" acked 1
ctl steps --job steady-0 >"$T/steps.txt" || fail "argusctl steps"
[[ $(grep -c '^ ' "$T/steps.txt") -ge 2 ]] || fail "steady-0 lacks its steps: $(cat "$T/steps.txt")"

log "absurd steps"
flood --jobs 1 --prefix steady- --agent steady --epoch 3 --step 18446744073709551615 \
    >"$T/max.json" || fail "step 2^64-1"
expect_json "$T/max.json" invalid_argument 1
grep -q 'step 18446744073709551615 of job steady-0 rank 0 is not a step number' "$T/max.json" ||
    fail "message: $(cat "$T/max.json")"
flood --jobs 1 --prefix steady- --agent steady --epoch 4 --step $((2 + (1 << 40))) \
    >"$T/jump.json" || fail "step jump"
expect_json "$T/jump.json" invalid_argument 1
grep -q 'is 1099511627776 past its highest step 2' "$T/jump.json" || fail "message: $(cat "$T/jump.json")"
[[ $(labelled "$HPORT" argus_limit_rejections_total 'limit="step_max"') == 1 ]] || fail "step_max count"
[[ $(labelled "$HPORT" argus_limit_rejections_total 'limit="step_jump"') == 1 ]] || fail "step_jump count"

log "second collector with limits.job_memory 8MiB"
kill "$COLLECTOR_PID"
wait "$COLLECTOR_PID" 2>/dev/null
CPORT=$(free_port)
HPORT=$(free_port)
start_collector "$T/store2" --limits.job_memory 8MiB --limits.max_jobs 100000
flood --jobs 500 --prefix mem- --agent mem >"$T/mem.json" || fail "memory flood"
cat "$T/mem.json"
# 32 KiB per job and 24 KiB per rank charged: 146 one-rank jobs fit in 8 MiB
expect_json "$T/mem.json" acked 146
expect_json "$T/mem.json" resource_exhausted 354
grep -q 'over limits.job_memory (8388608 bytes' "$T/mem.json" || fail "message: $(cat "$T/mem.json")"
used=$(metric "$HPORT" argus_limit_job_memory_bytes)
limit=$(metric "$HPORT" argus_limit_job_memory_limit_bytes)
[[ $limit == 8388608 ]] || fail "argus_limit_job_memory_limit_bytes is $limit"
((used <= limit && used > 0)) || fail "charged $used bytes of $limit"
[[ $(labelled "$HPORT" argus_limit_rejections_total 'limit="job_memory"') == 354 ]] ||
    fail "job_memory count"
log "PASS"
