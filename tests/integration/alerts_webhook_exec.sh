#!/usr/bin/env bash
# Alerts to a webhook and an exec hook. The webhook (a receiver run here)
# answers 500 to its first two posts: the collector retries (counted as
# failed) until it is accepted, with the bearer token from the token file
# and the argus.alert.v1 payload. The exec hook hangs the first time it runs:
# it is killed at alerts.exec_timeout and run again; then it gets the same
# event on stdin and ARGUS_ALERT_* in its environment. The resolve (the job
# ends) reaches both.
# test-cpu: idle: a short sim run, then waits on the webhook and the hook
source "$(dirname "$0")/lib.sh"

WPORT=$(free_port)
/usr/bin/python3 "$(dirname "$0")/alerts_receiver.py" "$WPORT" "$T/webhook.log" 2 &
PIDS+=($!)
wait_for "the webhook receiver" 10 bash -c "echo >/dev/tcp/127.0.0.1/$WPORT"
echo "s3cr3t-token" >"$T/token"
cat >"$T/hook.sh" <<HOOK
#!/bin/bash
# first run: hang (the collector must kill it); later: record what came in
if [[ ! -e $T/hook.hung ]]; then
    echo \$\$ >$T/hook.hung
    exec sleep 300
fi
n=\$(ls $T | grep -c '^hook.run')
cat >$T/hook.run\$n.json
env | grep '^ARGUS_ALERT_' | sort >$T/hook.env\$n
HOOK
chmod +x "$T/hook.sh"

start_collector "$T/store" --alerts.webhook "http://127.0.0.1:$WPORT/hook" \
    --alerts.webhook_token_file "$T/token" --alerts.exec "$T/hook.sh" --alerts.exec_timeout 2s \
    --alerts.backoff_max 1s --diag.job_idle 8s --http.public_url "http://127.0.0.1:$HPORT/"
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job cs-hook --scenario compute-straggler \
    --ranks 64 --steps 100 --rate 50 --steps_per_batch 2 --tp 2 --seed 7 >"$T/sim.json" ||
    fail "sim failed: $(cat "$T/sim.json")"
culprit=$(tail -1 "$T/sim.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')

accepted() { # STATUS: the webhook accepted an event with this status
    [[ -e $T/webhook.log ]] && grep '"ok": true' "$T/webhook.log" | grep -q "\"status\": \"$1\""
}
export -f accepted
export T
wait_every "the firing alert accepted by the webhook" 60 0.5 bash -c "accepted firing"
wait_every "the hung hook killed and run again" 60 0.5 bash -c "ls $T/hook.run*.json"
hung=$(cat "$T/hook.hung")
! kill -0 "$hung" 2>/dev/null || fail "the hung hook (pid $hung) is still running"
grep -q "exec $T/hook.sh: still running after 2.0 s: killed" "$T/collector.log" ||
    fail "the hook's timeout is not logged: $(grep alerts "$T/collector.log")"
wait_every "the resolve at the webhook" 60 0.5 bash -c "accepted resolved"
wait_every "the resolve at the hook" 60 0.5 bash -c "ls $T/hook.run1.json"

/usr/bin/python3 - "$T/webhook.log" "$T/hook.run0.json" "$culprit" <<'PY' || fail "payloads"
import json, sys
posts = [json.loads(l) for l in open(sys.argv[1])]
assert [p["ok"] for p in posts[:2]] == [False, False], "the first two posts were failed"
ok = [p for p in posts if p["ok"]]
assert [p["body"]["status"] for p in ok] == ["firing", "resolved"], [p["body"]["status"] for p in ok]
for p in posts:
    assert p["auth"] == "Bearer s3cr3t-token", p["auth"]
    b = p["body"]
    assert b["schema"] == "argus.alert.v1", b
    a = b["alert"]
    assert a["job"] == "cs-hook" and a["cause"] == "compute", a
    assert a["ranks"] == [int(sys.argv[3])], a
    assert a["subject"] == "rank:" + sys.argv[3], a  # one rank of its node: its own subject
    assert int(a["firing_unix_ns"]) > 0 and isinstance(a["firing_unix_ns"], str), a
assert ok[0]["body"]["report"]["job"] == "cs-hook", ok[0]["body"]["report"]  # the report itself
assert int(ok[1]["body"]["alert"]["resolved_unix_ns"]) >= int(ok[1]["body"]["alert"]["firing_unix_ns"])
hook = json.load(open(sys.argv[2]))
assert hook["schema"] == "argus.alert.v1" and hook["status"] == "firing", hook
assert hook["alert"]["id"] == ok[0]["body"]["alert"]["id"], "the hook got another alert"
print("%d posts, %d accepted" % (len(posts), len(ok)))
PY
# the alert's report link (http.public_url + /report/ID) opens that report
url=$(/usr/bin/python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["body"]["report_url"])' "$T/webhook.log")
[[ $url == "http://127.0.0.1:$HPORT/report/"* ]] || fail "report_url '$url'"
curl -sf "$url" -o "$T/report.html" || fail "GET $url"
grep -q "${url##*/}" "$T/report.html" && grep -q 'href="/job/cs-hook"' "$T/report.html" \
    || fail "the report page at $url: $(head -c 300 "$T/report.html")"
grep -qx "ARGUS_ALERT_JOB=cs-hook" "$T/hook.env0" || fail "hook env: $(cat "$T/hook.env0")"
grep -qx "ARGUS_ALERT_RANKS=$culprit" "$T/hook.env0" || fail "hook env: $(cat "$T/hook.env0")"
grep -qx "ARGUS_ALERT_CAUSE=compute" "$T/hook.env0" || fail "hook env: $(cat "$T/hook.env0")"
grep -qx "ARGUS_ALERT_STATUS=firing" "$T/hook.env0" || fail "hook env: $(cat "$T/hook.env0")"
grep -qx "ARGUS_ALERT_STATUS=resolved" "$T/hook.env1" || fail "hook env: $(cat "$T/hook.env1")"
sink() { metric "$HPORT" "argus_alerts_$1{sink=\"$2\",target=\"$3\"}"; }
[[ $(sink failed_total webhook "http://127.0.0.1:$WPORT/hook") -ge 2 ]] || fail "webhook failures not counted"
[[ $(sink failed_total exec "$T/hook.sh") -ge 1 ]] || fail "hook timeout not counted"
[[ $(sink sent_total webhook "http://127.0.0.1:$WPORT/hook") == 2 ]] || fail "webhook sent count"
[[ $(sink queued exec "$T/hook.sh") == 0 ]] || fail "exec queue not empty"
echo "webhook and exec sinks ok"
