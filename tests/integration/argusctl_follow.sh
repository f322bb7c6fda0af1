#!/usr/bin/env bash
# argusctl for on-call, against the real collector fed by the simulator:
# stragglers --follow started before the job prints its reports as they
# arrive (--json: one object per line, each report once, 64-bit times as
# strings) and exits 0 on SIGINT; a follower started later prints none of
# the reports that already existed; --cause, --node and --since filter;
# the collector's address comes from --collector, ARGUSCTL_COLLECTOR or
# ~/.config/argus/argusctl.conf in that order, and when none is set and the
# default does not answer the error names all three.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
job=follow-cs
"$BIN/argusctl" --collector "127.0.0.1:$CPORT" --json stragglers --job "$job" --follow \
    --poll 200ms >"$T/follow.jsonl" 2>"$T/follow.err" &
follower=$!
PIDS+=("$follower")
"$BIN/argusctl" --collector "127.0.0.1:$CPORT" stragglers --job "$job" --follow --poll 200ms \
    --cause compute >"$T/follow.txt" 2>"$T/follow-txt.err" &
text_follower=$!
PIDS+=("$text_follower")
wait_for "the followers to wait for the job" 20 grep -q "waiting for the job" "$T/follow.err"

"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$job" --scenario compute-straggler \
    --ranks 64 --steps 100 --rate 50 --steps_per_batch 2 --tp 2 --seed 7 >"$T/sim.json" ||
    fail "sim failed: $(cat "$T/sim.json")"
culprit=$(tail -1 "$T/sim.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')
wait_for "a followed report" 60 grep -q '"id"' "$T/follow.jsonl"
wait_for "a followed PAGES line" 60 grep -Eq "^  PAGES +rank $culprit .*COMPUTE" "$T/follow.txt"

# every report the collector has now was printed by the JSON follower, once
ctl --json stragglers --job "$job" >"$T/all.json" || fail "argusctl --json stragglers"
check_followed() {
    /usr/bin/python3 - "$T/follow.jsonl" "$T/all.json" "$job" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ids = [r["id"] for r in lines]
assert len(ids) == len(set(ids)), "a report printed twice"
for r in lines:
    assert r["job"] == sys.argv[3], r["job"]
    assert isinstance(r["created_unix_ns"], str) and int(r["created_unix_ns"]) > 2**53, r["created_unix_ns"]
have = {r["id"] for r in json.load(open(sys.argv[2]))["reports"]}
missing = have - set(ids)
assert not missing, "not followed (yet): %s" % sorted(missing)[:3]
PY
}
export -f check_followed
export T job
wait_for "the follower to print every report" 30 bash -c check_followed
check_followed || fail "followed reports wrong"

kill -INT "$follower"
wait "$follower"; rc=$?
[[ $rc == 0 ]] || fail "--follow exited $rc on SIGINT"
kill -INT "$text_follower"; wait "$text_follower"

# a follower started now prints none of what exists (with --since: all of it)
ctl --json stragglers --job "$job" >"$T/before.json"
"$BIN/argusctl" --collector "127.0.0.1:$CPORT" --json stragglers --job "$job" --follow \
    --poll 200ms >"$T/late.jsonl" &
late=$!
PIDS+=("$late")
"$BIN/argusctl" --collector "127.0.0.1:$CPORT" --json stragglers --job "$job" --follow \
    --poll 200ms --since 1h >"$T/since.jsonl" &
since=$!
PIDS+=("$since")
wait_for "--since to print what exists" 30 grep -q '"id"' "$T/since.jsonl"
kill -INT "$late" "$since"; wait "$late"; wait "$since"
/usr/bin/python3 - "$T/before.json" "$T/late.jsonl" <<'PY' || fail "a late follower printed old reports"
import json, sys
old = {r["id"] for r in json.load(open(sys.argv[1]))["reports"]}
late = [json.loads(l)["id"] for l in open(sys.argv[2]) if l.strip()]
assert not old & set(late), sorted(old & set(late))[:3]
PY

# filters
count() { ctl --json stragglers --job "$job" "$@" |
    /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["reports"]))'; }
node=$(/usr/bin/python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["reports"]:
    for s in r["suspects"]:
        if s["rank"] == int(sys.argv[2]) and s["cause"] == "CAUSE_COMPUTE":
            print(s["node"]); sys.exit(0)' "$T/all.json" "$culprit")
[[ -n $node ]] || fail "no compute suspect for rank $culprit in $(head -c 300 "$T/all.json")"
(($(count --cause compute) >= 1)) || fail "--cause compute found nothing"
[[ $(count --cause link,silent) == 0 ]] || fail "--cause link,silent found reports"
(($(count --node "$node") >= 1)) || fail "--node $node found nothing"
[[ $(count --node no-such-node) == 0 ]] || fail "--node no-such-node found reports"
(($(count --since 1h) >= 1)) || fail "--since 1h found nothing"
[[ $(count --since 2099-01-01T00:00:00Z) == 0 ]] || fail "--since in the future found reports"
ctl --json stragglers --job "$job" --cause compute | /usr/bin/python3 -c '
import json, sys
for r in json.load(sys.stdin)["reports"]:
    assert all(s["cause"] == "CAUSE_COMPUTE" for s in r["suspects"]), r["suspects"]' ||
    fail "--cause compute left other suspects in"
out=$(ctl stragglers --job "$job" --cause slow 2>&1); rc=$?
[[ $rc == 2 && $out == *"unknown cause 'slow'"* ]] || fail "--cause slow: rc $rc: $out"
out=$(ctl stragglers --job "$job" --since yesterday 2>&1); rc=$?
[[ $rc == 2 && $out == *"--since: 'yesterday'"* ]] || fail "--since yesterday: rc $rc: $out"

# the collector's address: --collector, then ARGUSCTL_COLLECTOR, then the file
mkdir -p "$T/home/.config/argus" "$T/empty"
printf 'collector = 127.0.0.1:%s\n' "$CPORT" >"$T/home/.config/argus/argusctl.conf"
noenv() { env -u ARGUSCTL_COLLECTOR -u XDG_CONFIG_HOME "$@"; }
noenv HOME="$T/home" "$BIN/argusctl" --timeout 5s jobs | grep -q "$job" ||
    fail "the address from ~/.config/argus/argusctl.conf did not work"
noenv HOME="$T/empty" ARGUSCTL_COLLECTOR="127.0.0.1:$CPORT" "$BIN/argusctl" --timeout 5s jobs |
    grep -q "$job" || fail "the address from ARGUSCTL_COLLECTOR did not work"
dead=$(free_port)
out=$(noenv HOME="$T/home" ARGUSCTL_COLLECTOR="127.0.0.1:$dead" "$BIN/argusctl" --timeout 2s jobs 2>&1)
rc=$?
[[ $rc == 3 && $out == *"(from ARGUSCTL_COLLECTOR) unreachable"* ]] ||
    fail "ARGUSCTL_COLLECTOR does not beat the file: rc $rc: $out"
noenv HOME="$T/home" ARGUSCTL_COLLECTOR="127.0.0.1:$dead" "$BIN/argusctl" \
    --collector "127.0.0.1:$CPORT" --timeout 5s jobs | grep -q "$job" ||
    fail "--collector does not beat ARGUSCTL_COLLECTOR"
printf 'collector = 127.0.0.1:%s\ncolour = blue\n' "$CPORT" >"$T/home/.config/argus/argusctl.conf"
out=$(noenv HOME="$T/home" "$BIN/argusctl" jobs 2>&1); rc=$?
[[ $rc == 2 && $out == *"argusctl.conf:2: unknown key 'colour'"* ]] ||
    fail "a bad argusctl.conf: rc $rc: $out"
if [[ -e /etc/argus/argusctl.conf ]]; then
    log "skip the no-address check: /etc/argus/argusctl.conf exists here"
elif "$BIN/argusctl" --collector 127.0.0.1:7700 --timeout 1s jobs >/dev/null 2>&1; then
    log "skip the no-address check: a collector answers on 127.0.0.1:7700 here"
else
    out=$(noenv HOME="$T/empty" "$BIN/argusctl" --timeout 2s jobs 2>&1); rc=$?
    [[ $rc == 3 && $out == *"--collector"* && $out == *ARGUSCTL_COLLECTOR* &&
        $out == *argusctl.conf* ]] || fail "no address set: rc $rc: $out"
fi
echo "argusctl follow ok"
