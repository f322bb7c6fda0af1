#!/usr/bin/env bash
# TLS failures say why (common/tls_why.h), with real certificates made now by
# deploy/pki/make-pki.sh and openssl, against real collectors under mTLS.
# argusctl: an expired client certificate, one from another CA, a collector
# certificate it does not trust, one for another host, an expired one: each
# exits 5 with its sentence naming the file; no client certificate is a
# usage error (2) that says so; an agent certificate querying is refused (4)
# naming our file; a port where nothing listens is still unreachable (3).
# The agent with an expired certificate logs the sentence once, not per retry.
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || skip "no openssl to make the test PKI"
unset ARGUS_GRPC_PLAINTEXT ARGUS_TLS_CA ARGUS_TLS_CERT ARGUS_TLS_KEY
PKI=$REPO/deploy/pki/make-pki.sh
P=$T/pki O=$T/other
"$PKI" "$P" --collector collector --agent node-a --query ops --expired-agent node-x >/dev/null
"$PKI" "$O" --query ops >/dev/null # a CA the collector does not trust

# server NAME SAN DAYS: $P/NAME.{crt,key}, a collector certificate from P's CA
server() {
    printf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' \
        "$2" >"$T/$1.ext"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$P/$1.key" 2>/dev/null
    openssl req -new -key "$P/$1.key" -subj "/O=argus/OU=collector/CN=$1" 2>/dev/null |
        openssl x509 -req -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days "$3" \
            -extfile "$T/$1.ext" -out "$P/$1.crt" 2>/dev/null || fail "cannot make $1's certificate"
}
server elsewhere "DNS:collector.example" 30
server stale "DNS:localhost,IP:127.0.0.1" -1

# collector GRPC_PORT HTTP_PORT CERT: a collector under mTLS with $P/CERT.*
collector() {
    "$BIN/argus-collector" --grpc.listen "127.0.0.1:$1" --http.listen "127.0.0.1:$2" \
        --store.dir "$T/store.$3" --tls.ca "$P/ca.crt" --tls.cert "$P/$3.crt" \
        --tls.key "$P/$3.key" >>"$T/collector.$3.log" 2>&1 &
    PIDS+=($!)
    wait_for "collector ($3) on :$1" 15 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1"
}
# ctl PORT CA CERT ARGS...: argusctl with CA and CERT(.crt, .key)
ctl() {
    local port=$1 ca=$2 cert=$3; shift 3
    "$BIN/argusctl" --collector "127.0.0.1:$port" --timeout 5s --tls.ca "$ca" \
        --tls.cert "$cert.crt" --tls.key "$cert.key" "$@"
}
# expect_ctl RC NEEDLE ARGS...: argusctl exits RC and says NEEDLE on stderr
expect_ctl() {
    local want=$1 needle=$2 rc; shift 2
    out=$("$@" 2>&1 >/dev/null); rc=$?
    [[ $rc == "$want" && $out == *"$needle"* ]] || fail "$* : rc $rc (want $want): $out"
    log "rc $rc: $out"
}

collector "$CPORT" "$HPORT" collector
wait_for "the collector to answer" 15 ctl "$CPORT" "$P/ca.crt" "$P/query-ops" jobs

expect_ctl 5 "TLS handshake refused: our certificate (tls.cert $P/agent-node-x.crt) expired on 20" \
    ctl "$CPORT" "$P/ca.crt" "$P/agent-node-x" jobs
expect_ctl 5 "the collector refused our client certificate (tls.cert $O/query-ops.crt): it is not signed by the CA in tls.ca $P/ca.crt, which signed the collector's" \
    ctl "$CPORT" "$P/ca.crt" "$O/query-ops" jobs
expect_ctl 5 "the collector's certificate (issued by /O=argus/CN=argus test CA) is not signed by the CA in tls.ca $O/ca.crt" \
    ctl "$CPORT" "$O/ca.crt" "$P/query-ops" jobs
expect_ctl 2 "tls.cert is not set (tls.ca, tls.cert and tls.key go together)" \
    "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --tls.ca "$P/ca.crt" jobs
expect_ctl 4 "may not call /argus.v1.Query/Jobs: it needs OU=query (our tls.cert $P/agent-node-a.crt)" \
    ctl "$CPORT" "$P/ca.crt" "$P/agent-node-a" jobs
nobody=$(free_port)
expect_ctl 3 "unreachable" ctl "$nobody" "$P/ca.crt" "$P/query-ops" --timeout 2s jobs
grep -q "certificate verify failed" "$T/collector.collector.log" ||
    fail "the collector did not log the failed verifications"
log "argusctl: expired, another CA (ours, the collector's), no certificate, role, nothing listening"

# the collector's certificate: for another host; expired
ports=($(free_port) $(free_port) $(free_port) $(free_port))
collector "${ports[0]}" "${ports[1]}" elsewhere
expect_ctl 5 "the collector's certificate is for collector.example, not 127.0.0.1" \
    ctl "${ports[0]}" "$P/ca.crt" "$P/query-ops" jobs
collector "${ports[2]}" "${ports[3]}" stale
expect_ctl 5 "the collector's certificate expired on 20" \
    ctl "${ports[2]}" "$P/ca.crt" "$P/query-ops" jobs
log "argusctl: the collector's certificate for another host, expired"

# the agent with an expired certificate: the sentence once, the retries many
"$BIN/argus-agent" --collector.address "127.0.0.1:$CPORT" --spool.dir "$T/spool" \
    --http.listen "" --node.name node-x --tls.ca "$P/ca.crt" --tls.cert "$P/agent-node-x.crt" \
    --tls.key "$P/agent-node-x.key" --collector.backoff_min 100ms --collector.backoff_max 500ms \
    --cupti.socket "$T/cupti.sock" --probes.enable "" >>"$T/agent.log" 2>&1 &
PIDS+=($!)
sentence="collector 127.0.0.1:$CPORT refuses the TLS handshake: our certificate (tls.cert $P/agent-node-x.crt) expired on 20"
wait_for "the agent to say why" 30 grep -qF "$sentence" "$T/agent.log"
wait_for "the agent to retry" 30 bash -c "(( \$(grep -c 'status 14' $T/agent.log) >= 3 ))"
sleep 11 # past a second diagnosis: same reason, no second line
n=$(grep -cF "$sentence" "$T/agent.log")
[[ $n == 1 ]] || fail "the agent said why $n times: $(grep -F 'TLS' "$T/agent.log")"
log "agent: $(grep -F "$sentence" "$T/agent.log")"
echo "tls why ok"
