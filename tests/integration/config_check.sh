#!/usr/bin/env bash
# Config an operator can trust: --check-config (and --print-config) refuse
# what a start refuses, every error with its file:line or flag and why,
# and start nothing; a good config prints "ok" and exits 0. SIGHUP names
# each changed key with old -> new and whether it applied live or needs a
# restart; an invalid new config is refused with the reason and the
# running one kept (the collector goes on answering).
source "$(dirname "$0")/lib.sh"

cat >"$T/collector.conf" <<EOF_CONF
[log]
level = trace
[grpc]
listen = garbage
[store]
dir = $T/never
[diag]
window = 40
min_hits = 50
EOF_CONF
for mode in --check-config --print-config; do
    out=$("$BIN/argus-collector" --config "$T/collector.conf" $mode 2>&1); rc=$?
    [[ $rc == 2 ]] || fail "collector $mode: rc $rc: $out"
    for want in "collector.conf:2: log.level: 'trace' is not error, warn, info or debug" \
        "collector.conf:4: grpc.listen: 'garbage' is not an address to listen on" \
        "collector.conf:9: diag.min_hits = 50 is above diag.window = 40 ($T/collector.conf:8)"; do
        [[ $out == *"$want"* ]] || fail "collector $mode does not say: $want; got: $out"
    done
done
[[ -e $T/never ]] && fail "--check-config created the store directory"

cat >"$T/agent.conf" <<'EOF_CONF'
[probes]
enable = sched,bogus
[cupti]
sample_mode = bogus
EOF_CONF
out=$("$BIN/argus-agent" --config "$T/agent.conf" --check-config --spool.segment 1GiB 2>&1); rc=$?
[[ $rc == 2 ]] || fail "agent --check-config: rc $rc: $out"
for want in "agent.conf:2: probes.enable: unknown 'bogus'" \
    "agent.conf:4: cupti.sample_mode: 'bogus' is not always, steps or time" \
    "--spool.segment: spool.segment = 1073741824 bytes is above spool.cap / 4"; do
    [[ $out == *"$want"* ]] || fail "agent --check-config does not say: $want; got: $out"
done
out=$("$BIN/argus-agent" --config /dev/null --check-config --collector.address nowhere 2>&1); rc=$?
[[ $rc == 2 && $out == *"--collector.address: 'nowhere' is not an address"* ]] ||
    fail "agent collector.address: rc $rc: $out"

# the shipped configs are the defaults: no TLS choice, which a start refuses,
# so the check does too; with the choice made they are valid
for d in agent collector; do
    out=$("$BIN/argus-$d" --config "$REPO/deploy/config/$d.conf" --check-config 2>&1); rc=$?
    [[ $rc == 2 && $out == *"no TLS configured: set tls.ca, tls.cert and tls.key"* ]] ||
        fail "argus-$d --check-config of the shipped config without TLS: rc $rc: $out"
    out=$("$BIN/argus-$d" --config "$REPO/deploy/config/$d.conf" --check-config \
        --grpc.plaintext true 2>&1); rc=$?
    [[ $rc == 0 && $out == "ok: $REPO/deploy/config/$d.conf is valid" ]] ||
        fail "argus-$d --check-config of the shipped config: rc $rc: $out"
    out=$("$BIN/argus-$d" --config "$REPO/deploy/config/$d.conf" --check-config \
        --grpc.plaintext true --tls.ca /x --tls.cert /y --tls.key /z 2>&1); rc=$?
    [[ $rc == 2 && $out == *"are both set: choose one"* ]] ||
        fail "argus-$d --check-config with plaintext and TLS: rc $rc: $out"
    "$BIN/argus-$d" --config "$REPO/deploy/config/$d.conf" --print-config >/dev/null ||
        fail "argus-$d --print-config of the defaults refused"
    # TLS files are read as a start reads them: a missing one is named
    out=$("$BIN/argus-$d" --config "$REPO/deploy/config/$d.conf" --check-config \
        --tls.ca "$T/no-ca.crt" --tls.cert "$T/no.crt" --tls.key "$T/no.key" 2>&1); rc=$?
    [[ $rc == 2 && $out == *"tls.ca $T/no-ca.crt: No such file or directory"* ]] ||
        fail "argus-$d --check-config with a missing tls.ca: rc $rc: $out"
done

# the collector's URLs: not a URL, and a report link with an unknown placeholder
C=("$BIN/argus-collector" --config /dev/null --grpc.plaintext true --check-config)
out=$("${C[@]}" --alerts.alertmanager "not a url" 2>&1); rc=$?
[[ $rc == 2 && $out == *"'not a url'"* ]] || fail "alerts.alertmanager 'not a url': rc $rc: $out"
out=$("${C[@]}" --http.public_url "argus:7702" 2>&1); rc=$?
[[ $rc == 2 && $out == *"http.public_url: 'argus:7702' is not an http:// or https:// URL"* ]] ||
    fail "http.public_url without a scheme: rc $rc: $out"
out=$("${C[@]}" --alerts.report_url "http://argus/r/{nope}" 2>&1); rc=$?
[[ $rc == 2 && $out == *"unknown placeholder '{nope}'"* ]] || fail "report_url {nope}: rc $rc: $out"
out=$("${C[@]}" --alerts.report_url "http://argus/r/{id}?job={job}" --http.public_url "http://argus:7702" 2>&1)
[[ $? == 0 ]] || fail "a good report_url and public_url refused: $out"

# SIGHUP: each change named, live or restart; a bad file refused, old kept
printf '[log]\nlevel = info\n[diag]\nmin_hits = 24\n' >"$T/run.conf"
start_collector "$T/store" --config "$T/run.conf"
printf '[log]\nlevel = debug\n[diag]\nmin_hits = 30\n' >"$T/run.conf"
kill -HUP "$COLLECTOR_PID"
wait_for "the reload" 20 grep -q "reloaded: 1 change apply at the next restart" "$T/collector.log"
grep -qF "log.level: 'info' -> 'debug' (applied live)" "$T/collector.log" ||
    fail "log.level change not named: $(grep config "$T/collector.log")"
grep -qF "diag.min_hits: '24' -> '30' (needs a restart)" "$T/collector.log" ||
    fail "diag.min_hits change not named: $(grep config "$T/collector.log")"
printf '[log]\nlevel = debug\n[diag]\nmin_hits = 64\n' >"$T/run.conf"
kill -HUP "$COLLECTOR_PID"
wait_for "the refused reload" 20 grep -q "reload rejected, keeping the running config" \
    "$T/collector.log"
grep -qF "reload rejected, keeping the running config: $T/run.conf:4: diag.min_hits = 64 is above diag.window = 40 (default)" \
    "$T/collector.log" || fail "the refusal does not say why: $(grep rejected "$T/collector.log")"
ctl --timeout 5s jobs >/dev/null || fail "collector stopped answering after a refused reload"
# the running config is still the first one: the same change is named again
printf '[log]\nlevel = debug\n[diag]\nmin_hits = 30\n' >"$T/run.conf"
kill -HUP "$COLLECTOR_PID"
reloads() { (($(grep -c "reloaded: 1 change apply" "$T/collector.log") >= 2)); }
export -f reloads
export T
wait_for "the third reload" 20 bash -c reloads
(($(grep -cF "diag.min_hits: '24' -> '30' (needs a restart)" "$T/collector.log") == 2)) ||
    fail "the restart-only change was not named again"
(($(grep -cF "log.level: 'info' -> 'debug'" "$T/collector.log") == 1)) ||
    fail "log.level applied live was named again (the running config was not updated)"
echo "config check ok"
