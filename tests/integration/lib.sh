# Helpers for integration tests (sourced). Each test gets a private temp
# directory and free loopback ports; everything it starts is killed on exit.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${ARGUS_BUILD:-$REPO/build}/bin
T=$(mktemp -d /tmp/argus-it.XXXXXX)
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for m in $(awk -v t="$T" '$2 ~ "^"t {print $2}' /proc/mounts); do umount -l "$m" 2>/dev/null; done
    [[ -n ${KEEP:-} ]] || rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
log() { echo "[$(date +%T)] $*"; }

# A free TCP port on 127.0.0.1.
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for "description" timeout_s command...: poll until the command succeeds.
wait_for() {
    local what=$1 timeout=$2; shift 2
    local end=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || fail "timed out waiting for $what"
        sleep 0.1
    done
}

# start_collector DIR [extra flags...]: starts on $CPORT (gRPC) / $HPORT (HTTP);
# sets COLLECTOR_PID.
start_collector() {
    local dir=$1; shift
    "$BIN/argus-collector" --grpc.listen "127.0.0.1:$CPORT" --http.listen "127.0.0.1:$HPORT" \
        --store.dir "$dir" "$@" >>"$T/collector.log" 2>&1 &
    COLLECTOR_PID=$!
    PIDS+=("$COLLECTOR_PID")
    wait_for "collector on :$CPORT" 10 "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --timeout 1s jobs
}

ctl() { "$BIN/argusctl" --collector "127.0.0.1:$CPORT" "$@"; }

# json_get FILE KEY: a top-level value of a one-line JSON object.
json_get() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

CPORT=$(free_port)
HPORT=$(free_port)
