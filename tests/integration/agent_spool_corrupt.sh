#!/usr/bin/env bash
# Corrupt spool segment: bytes flipped on disk while the agent is stopped are
# detected, skipped and counted at the next start; the agent keeps running
# and delivers every intact batch.
# test-cpu: idle: one agent replaying at 20 steps/s into its spool
source "$(dirname "$0")/lib.sh"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

start_agent "$T/spool" --replay.trace "$TRACE" --replay.ranks 8 --replay.rate 20 \
    --replay.steps 60 --replay.job corrupt --batch.max_age 200ms
sleep 5
kill -TERM "$AGENT_PID"; wait "$AGENT_WAIT_PID"
seg=$(ls "$T/spool"/seg-* | head -1)
size=$(stat -c %s "$seg")
log "segment $(basename "$seg"): $size bytes"
/usr/bin/python3 - "$seg" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for off in (len(b) // 3, len(b) // 3 + 1, len(b) // 2):
    b[off] ^= 0xff
open(p, "wb").write(b)
PY
start_collector "$T/store"
start_agent "$T/spool"
wait_for "the spool to drain" 30 bash -c "[[ \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_spool_records\"{print \$2}') == 0 ]]"
corrupt=$(metric "$APORT" argus_agent_spool_corrupt_total)
log "agent counted $corrupt corrupt records"
((corrupt >= 1)) || fail "flipped bytes were not detected"
curl -sf "127.0.0.1:$APORT/healthz" >/dev/null || fail "agent unhealthy after corruption"
written=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_ingest_batches_total" {print $2}')
((written >= 10)) || fail "only $written batches delivered"
reported=$(curl -s "127.0.0.1:$HPORT/metrics" | awk -F'[{} ]' '$1 == "argus_agent_reported_drops" && $2 ~ /reason="spool_corrupt"/ {print $NF}')
[[ $reported == "$corrupt" ]] || fail "collector saw spool_corrupt '$reported', agent counted $corrupt"
echo "corrupt spool ok ($written batches delivered, $corrupt records lost to corruption)"
