#!/usr/bin/env bash
# TLS configuration mistakes are refused at start with a sentence that names
# the key or file, in the collector, the agent and argusctl; plaintext runs
# only when asked for, with a warning.
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || skip "no openssl to make the test PKI"
unset ARGUS_GRPC_PLAINTEXT
P=$T/pki
"$REPO/deploy/pki/make-pki.sh" "$P" --collector collector --agent node-a --query ops >/dev/null

# expect_start RC NEEDLE CMD...: CMD exits RC (within 10 s) saying NEEDLE
expect_start() {
    local want=$1 needle=$2 out rc; shift 2
    out=$(timeout 10 "$@" 2>&1); rc=$?
    [[ $rc == "$want" && $out == *"$needle"* ]] || fail "$*: rc $rc (want $want), output: $out"
}
COL=("$BIN/argus-collector" --grpc.listen "127.0.0.1:$CPORT" --http.listen "" --store.dir "$T/store")
AGENT=("$BIN/argus-agent" --collector.address "127.0.0.1:$CPORT" --spool.dir "$T/spool" --http.listen ""
    --cupti.socket "$T/cupti.sock" --probes.enable "")
good=(--tls.ca "$P/ca.crt" --tls.cert "$P/collector.crt" --tls.key "$P/collector.key")

# the choice and the files are config errors (exit 2, as --check-config says them)
expect_start 2 "no TLS configured: set tls.ca, tls.cert and tls.key" "${COL[@]}"
expect_start 2 "grpc.plaintext = true and tls.ca, tls.cert and tls.key are both set" "${COL[@]}" --grpc.plaintext true "${good[@]}"
expect_start 2 "tls.key $T/missing.key: No such file or directory" "${COL[@]}" "${good[@]}" --tls.key "$T/missing.key"
expect_start 2 "tls.key $P/query-ops.key is not the key of the certificate in tls.cert" "${COL[@]}" "${good[@]}" --tls.key "$P/query-ops.key"
expect_start 2 "tls.cert is not set" "${COL[@]}" --tls.ca "$P/ca.crt" --tls.key "$P/collector.key"
expect_start 2 "tls.ca $P/collector.key holds no PEM certificate" "${COL[@]}" "${good[@]}" --tls.ca "$P/collector.key"
expect_start 2 "no TLS configured" "${AGENT[@]}" --node.name node-a
expect_start 2 "tls.cert $T/nope.crt: No such file" "${AGENT[@]}" --node.name node-a --tls.ca "$P/ca.crt" \
    --tls.cert "$T/nope.crt" --tls.key "$P/agent-node-a.key"
expect_start 2 "no TLS configured: set --tls.ca" "$BIN/argusctl" --collector "127.0.0.1:$CPORT" jobs
expect_start 2 "tls.key $P/collector.key is not the key" "$BIN/argusctl" --collector "127.0.0.1:$CPORT" \
    --tls.ca "$P/ca.crt" --tls.cert "$P/query-ops.crt" --tls.key "$P/collector.key" jobs
log "mistakes refused with the key or file named"

# plaintext only when asked for: it starts, warns, and serves plaintext clients
"${COL[@]}" --grpc.plaintext true >>"$T/collector.log" 2>&1 &
PIDS+=($!)
wait_for "plaintext collector" 10 env ARGUS_GRPC_PLAINTEXT=true "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --timeout 1s jobs
grep -q "warn main: grpc.plaintext = true: gRPC on 127.0.0.1:$CPORT has no TLS and no authentication" \
    "$T/collector.log" || fail "no plaintext warning: $(cat "$T/collector.log")"
"$BIN/argusctl" --collector "127.0.0.1:$CPORT" --grpc.plaintext true jobs >/dev/null || fail "--grpc.plaintext refused"
echo "tls config ok"
