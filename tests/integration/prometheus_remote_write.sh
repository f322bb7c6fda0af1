#!/usr/bin/env bash
# Remote write delivery against a receiver that fails on purpose
# (rw_receiver.py): the remote write 1.0 headers and the bearer token are
# sent; 5xx is retried (the same request again), 4xx is not (its samples
# counted rejected); with the endpoint gone, the bounded queue drops the
# oldest requests and counts their samples, and a refused connection is
# retried, not fatal. Bad remote_write settings are refused by
# --check-config with what is wrong.
source "$(dirname "$0")/lib.sh"

bad() { # WANT FLAGS...: --check-config exits 2 naming WANT
    local want=$1 out rc; shift
    out=$("$BIN/argus-collector" --check-config "$@" 2>&1); rc=$?
    [[ $rc == 2 && $out == *"$want"* ]] || fail "check-config $*: rc $rc: $out"
}
bad "'ftp://x/' is not an http:// or https:// URL" --remote_write.url ftp://x/
bad "'http://' is not an http:// or https:// URL" --remote_write.url http://
bad "remote_write.url is empty" --remote_write.bearer_token_file /etc/hostname
bad "$T/none: No such file" --remote_write.url http://h/api/v1/write \
    --remote_write.bearer_token_file "$T/none"
bad "remote_write.queue_bytes" --remote_write.queue_bytes 10

RW=$(free_port)
echo "s3cret-token" >"$T/token"
/usr/bin/python3 "$REPO/tests/integration/rw_receiver.py" "$RW" "$T/posts.jsonl" 503 503 400 \
    >"$T/receiver.log" 2>&1 &
RECEIVER_PID=$!
PIDS+=("$RECEIVER_PID")
wait_for "receiver" 10 bash -c "echo >/dev/tcp/127.0.0.1/$RW"
start_collector "$T/store" --remote_write.url "http://127.0.0.1:$RW/api/v1/write" \
    --remote_write.interval 0.2s --remote_write.timeout 10s --remote_write.queue_bytes 16384 \
    --remote_write.bearer_token_file "$T/token"
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job rw --ranks 8 --steps 60 --rate 50 \
    >"$T/sim.json" || fail "sim failed: $(cat "$T/sim.json")"

m() { curl -s "127.0.0.1:$HPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
export -f m
export HPORT
# 503, 503 (retried), 400 (dropped), then 204s
wait_for "5 posts" 60 bash -c "(( \$(wc -l <$T/posts.jsonl) >= 5 ))"
wait_for "samples sent" 30 bash -c '(( $(m argus_remote_write_samples_sent_total) > 0 ))'
/usr/bin/python3 - "$T/posts.jsonl" <<'PY' || fail "posts: $(head -5 "$T/posts.jsonl")"
import json, sys
posts = [json.loads(l) for l in open(sys.argv[1])]
assert [p["status"] for p in posts[:4]] == [503, 503, 400, 204], posts[:4]
for p in posts:
    assert p["path"] == "/api/v1/write", p
    assert p["encoding"] == "snappy" and p["type"] == "application/x-protobuf", p
    assert p["version"] == "0.1.0" and p["auth"] == "Bearer s3cret-token", p
    assert p["len"] > 0, p
# the two 503s and the 400 are one request sent three times: same length
assert posts[0]["len"] == posts[1]["len"] == posts[2]["len"], posts[:3]
print("%d posts" % len(posts))
PY
failed=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_remote_write_requests_total{result=\"failed\"}" {print $2}')
rejected=$(m argus_remote_write_samples_rejected_total)
[[ $failed == 2 ]] || fail "failed requests: '$failed', want 2"
((rejected > 0)) || fail "rejected samples: '$rejected': $(curl -s 127.0.0.1:$HPORT/metrics | grep remote_write | grep -v "^#")"
[[ $(m argus_remote_write_samples_dropped_total) == 0 ]] || fail "dropped with the endpoint up"

# the endpoint goes away: requests queue up to 16 KiB, then the oldest drop
kill "$RECEIVER_PID"
wait_for "samples dropped from the full queue" 90 bash -c \
    '(( $(m argus_remote_write_samples_dropped_total) > 0 ))'
queued=$(m argus_remote_write_queue_bytes)
((queued > 0 && queued <= 16384)) || fail "queue bytes '$queued' not within (0, 16384]"
kill -0 "$COLLECTOR_PID" || fail "collector died with the endpoint gone"
grep -q "remote_write.*retrying" "$T/collector.log" || fail "no retry logged"
log "failed $failed, rejected $rejected samples, queue $queued bytes, dropped $(m argus_remote_write_samples_dropped_total) samples"
echo "remote write delivery ok"
