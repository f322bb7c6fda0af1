#!/usr/bin/env bash
# Overload degrades honestly. Diagnosis is made slow (ARGUS_TEST_DIAG_DELAY_MS:
# the diagnosis worker sleeps that long per batch) and argus-sim is not:
#  1. acks still flow: the sim ends with every batch acked while diagnosis
#     still has most of them queued, which could not be if an ack waited on
#     diagnosis; the lag is in /metrics and logged once, and once diagnosis
#     has caught up there is no report for this healthy job; each agent's
#     clock offset is exported (near zero: same machine);
#  2. with a queue too small to hold the backlog, batches are still stored
#     and acked, and the ones diagnosis could not take are counted.
# Lockstep delivery: one batch per agent per step, so the counts below are
# exact (realistic delivery batches by age).
# test-cpu: idle: diagnosis sleeps per batch (ARGUS_TEST_DIAG_DELAY_MS)
source "$(dirname "$0")/lib.sh"

export ARGUS_TEST_DIAG_DELAY_MS=100
start_collector "$T/store" --diag.lag_warn 1s
# 32 ranks on 4 agents, 40 steps of one batch each: 160 batches in about 2 s,
# 16 s of diagnosis
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job ov --ranks 32 --steps 40 --rate 20 --delivery lockstep \
    >"$T/sim.json" || fail "sim did not complete: $(cat "$T/sim.json")"
queued=$(metric "$HPORT" argus_diag_queue_batches)
lag=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_diag_lag_seconds{job=\"ov\"}" {print $2}')
log "sim done: $(json_get "$T/sim.json" batches_acked) batches acked, p99 ack" \
    "$(json_get "$T/sim.json" ack_latency_p99_ms) ms; diagnosis queue $queued, lag ${lag:-?} s"
[[ $(json_get "$T/sim.json" batches_acked) == 160 ]] || fail "not every batch acked"
((queued > 0)) || fail "diagnosis queue empty when the sim ended: did acks wait on diagnosis?"
/usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "${lag:-0}" \
    || fail "no diagnosis lag exported for job ov: $(curl -s 127.0.0.1:$HPORT/metrics | grep lag)"
# each of the 4 agent streams has a clock offset estimate, all near zero
curl -s "127.0.0.1:$HPORT/metrics" | /usr/bin/python3 -c '
import sys
off = [float(l.split()[1]) for l in sys.stdin if l.startswith("argus_ingest_clock_offset_seconds{")]
assert len(off) == 4 and all(abs(o) < 1 for o in off), off' || fail "clock offsets not exported"
[[ $(metric "$HPORT" argus_ingest_clock_skewed_streams) == 0 ]] || fail "a stream flagged as skewed"
wait_for "the lag warning" 60 grep -q "diagnosis of job ov is .* behind" "$T/collector.log"
wait_for "diagnosis to catch up" 120 bash -c \
    "[[ \$(curl -s 127.0.0.1:$HPORT/metrics | awk '\$1 == \"argus_diag_queue_batches\" {print \$2}') == 0 ]]"
wait_for "the caught-up line" 10 grep -q "diagnosis of job ov caught up" "$T/collector.log"
[[ $(grep -c "diagnosis of job ov is .* behind" "$T/collector.log") == 1 ]] \
    || fail "lag warning not logged exactly once: $(grep 'job ov' "$T/collector.log")"
[[ $(metric "$HPORT" argus_diag_fed_batches_total) == 160 ]] || fail "not every batch diagnosed"
read -r _ _ total _ <<<"$(check_job ov 32)" || fail "stored records of job ov"
[[ $total == 1280 ]] || fail "stored $total records, want 1280"
ctl stragglers --job ov | grep -q "no straggler reports" \
    || fail "a report for a healthy job: $(ctl stragglers --job ov)"

# 2: a 1 MiB queue (each batch's unpacked arena is 256 KiB) and a slower
# diagnosis: most batches cannot wait; all are stored and acked
kill "$COLLECTOR_PID"
wait "$COLLECTOR_PID" 2>/dev/null
CPORT=$(free_port)
HPORT=$(free_port)
export ARGUS_TEST_DIAG_DELAY_MS=200
start_collector "$T/store2" --diag.queue_bytes 1MiB
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job ov2 --ranks 32 --steps 40 --rate 20 --delivery lockstep \
    >"$T/sim2.json" || fail "sim did not complete against a full queue: $(cat "$T/sim2.json")"
[[ $(json_get "$T/sim2.json" batches_acked) == 160 ]] || fail "not every batch acked (full queue)"
read -r _ _ total _ <<<"$(check_job ov2 32)" || fail "stored records of job ov2"
[[ $total == 1280 ]] || fail "stored $total records with a full queue, want 1280"
m=$(curl -s "127.0.0.1:$HPORT/metrics")
dropped=$(awk '$1 == "argus_diag_dropped_from_diagnosis_total{reason=\"queue_full\"}" {print $2}' <<<"$m")
batches=$(awk '$1 == "argus_diag_queue_dropped_batches_total" {print $2}' <<<"$m")
log "full queue: $batches batches ($dropped records) not diagnosed, all stored"
((batches > 0 && dropped == batches * 8)) || fail "drops not counted: $(grep diag_ <<<"$m")"
echo "overload ok"
