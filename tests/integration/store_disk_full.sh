#!/usr/bin/env bash
# A full disk never keeps the collector down (store.reserve, docs/operations.md
# "A full disk"). The store lives on a small loop-mounted ext4 with an 8 MiB
# reserve and a 2 MiB memtable (the WAL's preallocation, which a full disk
# spends before a write fails); a real agent replays 64 ranks x 600 steps.
# store.high_water 90: the restart on the full disk runs retention at once.
#   1. The disk fills while ingest runs: a write fails, the reserve is
#      released, /healthz says 503, acks stop (the agent keeps its batches
#      spooled), queries still work. kill -9 and restart on the full disk:
#      it opens, serves queries, and still takes nothing.
#   2. Space returns: batches are stored again, the reserve is taken back.
#   3. kill -9, the disk filled to the last block, restart: the open fails
#      for space, releases the reserve and succeeds; queries work; space
#      returns and ingest resumes.
# At the end every record the agent sent is stored exactly once.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || skip "needs root to mount a loop filesystem"
command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4 (apt-get install e2fsprogs)"

RANKS=64 STEPS=600 RATE=20 RESERVE=$((8 << 20))
DISK=$T/disk
truncate -s 128M "$T/disk.img"
mkfs.ext4 -q -F -m 0 "$T/disk.img" || fail "mkfs.ext4"
mkdir -p "$DISK"
mount -o loop "$T/disk.img" "$DISK" || skip "cannot loop-mount an ext4 image (no loop devices?)"
# lib.sh's cleanup unmounts what is under $T; the loop device goes with it
# (mount -o loop sets autoclear)

"$BIN/argus-sim" --job full --ranks $RANKS --steps $STEPS --record "$T/rec.bin" >"$T/rec.json" \
    || fail "argus-sim --record: $(cat "$T/rec.json")"

collector() {
    start_collector "$DISK/store" --store.reserve $RESERVE --store.memtable 2MiB --store.sync true \
        --store.high_water 90
}
cmetric() { metric "$HPORT" "$1"; }
healthz() { curl -s -o "$T/health" -w '%{http_code}' "127.0.0.1:$HPORT/healthz"; }
stored() { ctl --json jobs | /usr/bin/python3 -c 'import json,sys
print(sum(int(j["rank_steps"]) for j in json.load(sys.stdin)["jobs"] if j["job"] == "full"))'; }
stored_over() { (($(stored) > $1)); }
health_is() { [[ $(healthz) == "$1" ]]; }
metric_is() { [[ $(cmetric "$1") == "$2" ]]; } # NAME VALUE
# fill N: take every free block of the disk
fill() {
    local avail
    avail=$(df --output=avail -B1 "$DISK" | tail -1)
    fallocate -l "$avail" "$DISK/filler$1" 2>/dev/null || true
    dd if=/dev/zero of="$DISK/filler$1.tail" bs=4k 2>/dev/null || true
    sync
    log "disk filled: $(df -h --output=avail "$DISK" | tail -1 | tr -d ' ') free"
}
unfill() { rm -f "$DISK"/filler*; sync; log "space freed: $(df -h --output=avail "$DISK" | tail -1 | tr -d ' ') free"; }
# acks_stay: the collector acks nothing for 3 s while the agent has batches spooled
acks_stay() {
    local a1 a2
    a1=$(cmetric argus_ingest_acks_total)
    sleep 3
    a2=$(cmetric argus_ingest_acks_total)
    [[ $a1 == "$a2" ]] || fail "$1: acks went on while the disk was full ($a1 -> $a2)"
    [[ $(metric "$APORT" argus_agent_spool_records) -gt 0 ]] || fail "$1: the agent has nothing spooled"
}
queries_work() {
    ctl jobs >/dev/null || fail "$1: argusctl jobs failed"
    ctl steps --job full --limit 5 >"$T/steps.txt" || fail "$1: argusctl steps failed"
    grep -q . "$T/steps.txt" || fail "$1: no steps answered"
}

collector
[[ -f $DISK/store/reserve ]] || fail "no reserve file in store.dir"
[[ $(cmetric argus_store_reserve_bytes) == "$RESERVE" ]] || fail "argus_store_reserve_bytes is not $RESERVE"
start_agent "$T/spool" --replay.records "$T/rec.bin" --replay.rate $RATE --batch.max_age 200ms
wait_every "first records stored" 20 0.5 stored_over 0

# 1. full while running
log "before the fill: $(stored) rank-steps stored"
fill 1
wait_every "the reserve released after a failed write" 30 0.5 metric_is argus_store_reserve_released_total 1
grep -q "disk full: released the reserve .* after a write failed for space" "$T/collector.log" \
    || fail "no log line for the released reserve: $(tail -5 "$T/collector.log")"
[[ $(cmetric argus_store_reserve_bytes) == 0 ]] || fail "argus_store_reserve_bytes is not 0 after the release"
wait_every "healthz 503" 10 0.5 health_is 503
acks_stay "running"
queries_work "running, disk full"
log "full while running: released, 503 ($(head -1 "$T/health" 2>/dev/null)), acks stopped, queries work"
{ kill -9 "$COLLECTOR_PID"; wait "$COLLECTOR_PID"; } 2>/dev/null
collector
log "restarted on the full disk ($(df -h --output=avail "$DISK" | tail -1 | tr -d ' ') free)"
queries_work "restarted on the full disk"
grep -q "store disk .* used, above store.high_water 90%: retention runs now" "$T/collector.log" \
    || fail "store.high_water: no early retention at the start on a full disk"
wait_every "healthz 503 after the restart" 15 0.5 health_is 503
healthz >/dev/null
grep -q "store writes failing: .*disk full" "$T/health" || fail "healthz says: $(cat "$T/health")"
acks_stay "restarted"

# 2. space returns
unfill
wait_every "healthz 200 again" 20 0.5 health_is 200
wait_every "the reserve taken back" 20 0.5 metric_is argus_store_reserve_bytes $RESERVE
grep -q "space returned .*took the reserve .* back" "$T/collector.log" || fail "no log line for the reserve taken back"
log "space returned: ingest resumed, reserve taken back ($(stored) rank-steps stored)"

# 3. killed, then the disk filled to the last block: the open needs the reserve
{ kill -9 "$COLLECTOR_PID"; wait "$COLLECTOR_PID"; } 2>/dev/null
fill 2
collector || fail "the collector did not open on a full disk: $(tail -5 "$T/collector.log")"
grep -q "released the reserve .* after opening the store failed for space" "$T/collector.log" \
    || fail "the open did not release the reserve: $(tail -5 "$T/collector.log")"
queries_work "opened on the full disk"
# the recovery removed the old WAL (and its preallocated blocks): the space
# it freed is taken too, so the reserve cannot come back while the test
# checks that ingest stays refused
fill 3
wait_every "healthz 503 after the open" 20 0.5 health_is 503
acks_stay "opened on the full disk"
log "opened on the full disk by releasing the reserve: queries work, acks stopped"
unfill
wait_every "every record stored" 60 1 stored_over $((RANKS * STEPS - 1))
read -r kmin kmax total lo < <(check_job full $RANKS) || fail "stored records"
log "stored: $total rank-steps, $kmin..$kmax steps per rank from step $lo"
((total == RANKS * STEPS && lo == 0)) || fail "stored $total rank-steps from step $lo, sent $((RANKS * STEPS))"
wait_every "the reserve taken back again" 20 0.5 metric_is argus_store_reserve_bytes $RESERVE
echo "store disk full ok"
