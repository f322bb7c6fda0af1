#!/usr/bin/env bash
# mTLS end to end with a test PKI made now by deploy/pki/make-pki.sh: the
# collector requires and verifies client certificates. A good agent
# certificate is accepted (its batches stored); no certificate, a wrong CA and
# an expired certificate fail the handshake (argusctl: rc 5 and why, see
# tls_why.sh; plaintext: unreachable, rc 3; the collector logs why); node-a's certificate writing node-b's data, a query
# certificate pushing and an agent certificate querying are each refused with
# PERMISSION_DENIED, and so are actions reset and undo without OU=admin; rotation (files replaced + SIGHUP) takes effect at the
# next connection without a restart (collector: at the next handshake; agent:
# it reconnects), and a broken set keeps the previous one.
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || skip "no openssl to make the test PKI"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"
unset ARGUS_GRPC_PLAINTEXT
PKI=$REPO/deploy/pki/make-pki.sh
P=$T/pki L=$T/live
"$PKI" "$P" --collector collector --agent node-a --query ops --admin boss --expired-agent node-x >/dev/null
"$PKI" "$T/other" --agent node-a --query ops >/dev/null # a CA the collector does not trust
mkdir -p "$L" "$T/alive" && cp "$P"/ca.crt "$P"/collector.crt "$P"/collector.key "$L/"
cp "$P"/ca.crt "$P"/agent-node-a.crt "$P"/agent-node-a.key "$T/alive/"

# qctl DIR CERT ARGS...: argusctl with DIR/CERT.{crt,key}, trusting DIR's CA
qctl() {
    local d=$1 c=$2; shift 2
    "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --timeout 5s --tls.ca "$d/ca.crt" \
        --tls.cert "$d/$c.crt" --tls.key "$d/$c.key" "$@"
}
# expect_ctl RC NEEDLE ARGS...: argusctl exits RC and says NEEDLE on stderr
expect_ctl() {
    local want=$1 needle=$2 rc; shift 2
    out=$("$@" 2>&1 >/dev/null); rc=$?
    [[ $rc == "$want" && $out == *"$needle"* ]] || fail "$* : rc $rc (want $want): $out"
}
expiry() { curl -s "127.0.0.1:$HPORT/metrics" | awk -v r="role=\"$1\"" '$1 == "argus_tls_cert_expiry_seconds{" r "}" {print $2}'; }
log_has() { grep -qF -- "$1" "$T/collector.log"; }

"$BIN/argus-collector" --grpc.listen "127.0.0.1:$CPORT" --http.listen "127.0.0.1:$HPORT" \
    --store.dir "$T/store" --tls.ca "$L/ca.crt" --tls.cert "$L/collector.crt" \
    --tls.key "$L/collector.key" >>"$T/collector.log" 2>&1 &
COLLECTOR_PID=$!
PIDS+=("$COLLECTOR_PID")
wait_for "collector (mTLS) on :$CPORT" 15 qctl "$P" query-ops jobs
log "query certificate accepted"

# the handshake refuses a client without a certificate, from another CA, expired
expect_ctl 3 unreachable "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --timeout 3s --grpc.plaintext true jobs
expect_ctl 5 "not signed by the CA in tls.ca" "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --timeout 3s --tls.ca "$P/ca.crt" \
    --tls.cert "$T/other/query-ops.crt" --tls.key "$T/other/query-ops.key" jobs
expect_ctl 5 "agent-node-x.crt) expired on" qctl "$P" agent-node-x --timeout 3s jobs
wait_for "the collector to log a plaintext client" 10 log_has "wrong version number"
# a TLS client without a certificate (argusctl always sends one: openssl here)
timeout 10 openssl s_client -connect "127.0.0.1:$CPORT" -CAfile "$P/ca.crt" -alpn h2 </dev/null >/dev/null 2>&1
wait_for "the collector to log a client without a certificate" 10 log_has "peer did not return a certificate"
wait_for "the collector to log failed verifications" 10 log_has "certificate verify failed"
log "no certificate, wrong CA, expired: handshake refused"

# roles: an agent certificate may not query
expect_ctl 4 "certificate 'node-a' (roles: agent) may not call /argus.v1.Query/Jobs" qctl "$P" agent-node-a jobs
log "agent certificate querying: PERMISSION_DENIED"

# actions: a query certificate lists them but may not reset or undo (OU=admin)
qctl "$P" query-ops actions | grep -q "breaker: closed" || fail "actions list: $(qctl "$P" query-ops actions 2>&1)"
expect_ctl 4 "certificate 'ops' (roles: query) may not call /argus.v1.Query/ActionsReset" \
    qctl "$P" query-ops actions reset
expect_ctl 4 "may not call /argus.v1.Query/ActionUndo" qctl "$P" query-ops actions undo 1
qctl "$P" admin-boss actions reset "tls test" | grep -q "breaker closed" || fail "admin reset"
qctl "$P" query-ops --json actions | grep -q '"by":"boss"' ||
    qctl "$P" query-ops --json actions | grep -q '"by": "boss"' || fail "the reset does not name boss"
expect_ctl 1 "no action '7'" qctl "$P" admin-boss actions undo 7
log "actions: query lists, only admin resets and undoes"

# agents: node-a as itself is stored; node-a's certificate as node-b, and a
# query certificate, are refused
agent() { # NAME NODE CERTDIR CERT JOB
    "$BIN/argus-agent" --collector.address "127.0.0.1:$CPORT" --spool.dir "$T/spool.$1" \
        --http.listen "" --node.name "$2" --tls.ca "$3/ca.crt" --tls.cert "$3/$4.crt" \
        --tls.key "$3/$4.key" --collector.backoff_max 1s --cupti.socket "$T/cupti.$1.sock" \
        --probes.enable "" --replay.trace "$TRACE" --replay.ranks 2 --replay.rate 20 \
        --replay.job "$5" --batch.max_age 200ms >>"$T/agent.$1.log" 2>&1 &
    PIDS+=($!)
}
agent good node-a "$T/alive" agent-node-a tls-a
GOOD_PID=${PIDS[-1]}
agent spoof node-b "$P" agent-node-a tls-b
agent query ops "$P" query-ops tls-q
wait_for "node-a's ranks to be stored" 30 bash -c \
    "$(declare -f qctl); CPORT=$CPORT BIN=$BIN qctl $P query-ops ranks --job tls-a | grep -q node-a"
wait_for "node-b's batches refused" 30 log_has "the certificate of 'node-a' may not write batches of agent 'node-b'"
wait_for "the query certificate's stream refused" 30 \
    log_has "certificate 'ops' (roles: query) may not call /argus.v1.Ingest/Push"
grep -q "status 7" "$T/agent.spoof.log" || fail "the spoofing agent was not told PERMISSION_DENIED"
expect_ctl 1 "no job" qctl "$P" query-ops ranks --job tls-b
expect_ctl 1 "no job" qctl "$P" query-ops ranks --job tls-q
rejects=$(curl -s "127.0.0.1:$HPORT/metrics" | awk '$1 == "argus_ingest_rejects_total{reason=\"identity\"}" {print $2}')
((rejects >= 2)) || fail "identity rejects not counted: '$rejects'"
log "node-a stored; node-a as node-b and a query certificate pushing: PERMISSION_DENIED ($rejects counted)"

# expiry in /metrics: the server certificate has ~365 days, the CA ~730
e=$(expiry server)
((e > 364 * 86400 && e <= 365 * 86400)) || fail "server certificate expiry $e s"
(($(expiry ca) > 729 * 86400)) || fail "CA expiry $(expiry ca) s"

# rotation: a new CA and server certificate (30 days) replace the files, SIGHUP
"$PKI" "$T/new" --days 30 --collector collector --agent node-a --query ops >/dev/null
for f in ca.crt collector.crt collector.key; do cp "$T/new/$f" "$L/$f.tmp" && mv "$L/$f.tmp" "$L/$f"; done
kill -HUP "$COLLECTOR_PID"
wait_for "the new CA to be trusted" 15 qctl "$T/new" query-ops jobs
expect_ctl 5 "the collector's certificate (issued by /O=argus/CN=argus test CA) is not signed by the CA in tls.ca $P/ca.crt" \
    qctl "$P" query-ops --timeout 3s jobs
kill -0 "$COLLECTOR_PID" || fail "the collector is gone"
e=$(expiry server)
((e > 29 * 86400 && e <= 30 * 86400)) || fail "server expiry after rotation: $e s"
log "rotated without a restart (pid $COLLECTOR_PID), expiry now $e s"

# the agent rotates too: new files + SIGHUP, it reconnects with them (its old
# certificate's CA is no longer trusted, so only the new set can deliver)
steps() { qctl "$T/new" query-ops --json jobs | /usr/bin/python3 -c \
    'import json,sys; print(sum(j.get("rank_steps", 0) for j in json.load(sys.stdin)["jobs"] if j["job"] == "tls-a"))'; }
# first SIGHUP with the old files: the agent really reconnects, and fails
n=$(grep -c "status 14" "$T/agent.good.log")
kill -HUP "$GOOD_PID"
wait_for "the agent's reconnect with its old certificate to fail" 20 \
    bash -c "(( \$(grep -c 'status 14' $T/agent.good.log) > $n ))"
for f in ca.crt agent-node-a.crt agent-node-a.key; do cp "$T/new/$f" "$T/alive/$f.tmp" && mv "$T/alive/$f.tmp" "$T/alive/$f"; done
kill -HUP "$GOOD_PID"
wait_for "the agent to reload its files" 10 bash -c "(( \$(grep -c 'TLS files reloaded' $T/agent.good.log) == 2 ))"
before=$(steps)
wait_for "node-a's records to keep arriving after its rotation" 30 bash -c \
    "$(declare -f qctl steps); CPORT=$CPORT BIN=$BIN T=$T; (( \$(steps) >= $before + 20 ))"
kill -0 "$GOOD_PID" || fail "the agent is gone"
log "agent rotated: records kept arriving ($before, then $(steps))"

# a broken set (key of another certificate) is refused; the previous one stays
cp "$P/collector.key" "$L/collector.key.tmp" && mv "$L/collector.key.tmp" "$L/collector.key"
kill -HUP "$COLLECTOR_PID"
qctl "$T/new" query-ops jobs >/dev/null || fail "a broken rotation broke the collector"
wait_for "the broken set to be logged" 10 log_has "TLS files not reloaded, the previous ones stay in use"
echo "tls mtls ok"
