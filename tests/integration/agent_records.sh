#!/usr/bin/env bash
# The agent's replay of recorded step records: argus-sim --record writes what
# 16 ranks x 30 steps would send; the agent plays the file through its own
# batcher, spool and exporter into the collector, and the collector holds
# exactly those records, byte for byte (argus-sim --verify), their kernels
# coded on the wire once the collector's acks said it reads the coding.
source "$(dirname "$0")/lib.sh"

"$BIN/argus-sim" --job rec --ranks 16 --steps 30 --record "$T/rec.bin" >"$T/rec.json" \
    || fail "could not record: $(cat "$T/rec.json")"
base=$(json_get "$T/rec.json" base_time)
start_collector "$T/store"
start_agent "$T/spool" --replay.records "$T/rec.bin" --replay.rate 50 --batch.max_age 200ms
wait_for "all records at the collector" 20 bash -c \
    "$BIN/argusctl --collector 127.0.0.1:$CPORT jobs | awk '\$1 == \"rec\" && \$5 >= 480 {ok=1} END {exit !ok}'"
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job rec --ranks 16 --steps 30 --verify \
    --base_time "$base" || fail "the collector does not hold exactly the recorded steps"
# the collector's acks say it reads coded kernels: after the first, the agent
# codes them (and --verify above found them back exactly)
coded=$(metric "$APORT" argus_agent_steps_coded_total)
log "$coded of 480 step records went with their kernels coded"
((coded > 0 && coded <= 480)) || fail "argus_agent_steps_coded_total is '$coded'"
# ... and after an ack of a batch that defined a record's kernel identity
# set, its next records go as the set (their clusters only): the collector
# decoded every one of them (none unknown), and --verify found them exact
sets=$(metric "$APORT" argus_agent_steps_kernel_sets_total)
referred=$(metric "$HPORT" argus_ingest_kernel_sets_referred_total)
log "$sets step records went as a kernel set; the collector decoded $referred"
((sets > 0 && sets == referred)) || fail "agent sent $sets records as a set, collector decoded $referred"
[[ $(metric "$HPORT" argus_ingest_kernel_sets_unknown_total) == 0 ]] ||
    fail "the collector met a kernel set it does not hold"
head -c 1000 "$T/rec.bin" >"$T/bad.bin"
out=$(timeout -s TERM 2 "$BIN/argus-agent" --spool.dir "$T/spool2" --http.listen "" --grpc.plaintext true \
    --cupti.socket "$T/c2.sock" --probes.enable "" --replay.records "$T/bad.bin" 2>&1)
grep -q "source records is off: .*bad.bin: bad entry at byte" <<<"$out" \
    || fail "a truncated file was not refused clearly: $out"
echo "record replay ok"
