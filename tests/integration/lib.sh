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

TRACE=${ARGUS_TRACE:-$REPO/../shared/data/kineto/trace_filter__sampled_rank-0.json.gz}

# start_agent SPOOLDIR [extra flags...]: an agent on $APORT (HTTP) sending to
# $CPORT; sets AGENT_PID.
start_agent() {
    local dir=$1; shift
    "$BIN/argus-agent" --collector.address "127.0.0.1:$CPORT" --spool.dir "$dir" \
        --http.listen "127.0.0.1:$APORT" --node.name testnode --collector.backoff_max 1s --cupti.socket "$T/cupti.sock" --probes.enable "" "$@" \
        >>"$T/agent.log" 2>&1 &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
    wait_for "agent on :$APORT" 10 curl -sf "127.0.0.1:$APORT/healthz"
}

# metric PORT NAME: the value of an unlabelled sample.
metric() { curl -s "127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

# check_job JOB RANKS: every rank's steps are 0..K-1 with no hole, stored
# once (job rank_steps == distinct keys). Prints "K_min K_max total".
check_job() {
    ctl steps --job "$1" --limit 100000 >"$T/check.txt" || fail "argusctl steps --job $1"
    ctl --json jobs >"$T/jobs.json"
    /usr/bin/python3 - "$T/check.txt" "$T/jobs.json" "$1" "$2" <<'PY'
import json, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:] if l[:1] == " "]
jobs = {j["job"]: j for j in json.load(open(sys.argv[2]))["jobs"]}
job, ranks = sys.argv[3], int(sys.argv[4])
keys = [(int(r[1]), int(r[0])) for r in rows]
assert len(keys) == len(set(keys)), "duplicate step records"
per = {}
for r, s in keys:
    per.setdefault(r, []).append(s)
assert sorted(per) == list(range(ranks)), "ranks %s" % sorted(per)
for r, ss in per.items():
    ss.sort()
    assert ss == list(range(ss[0], ss[0] + len(ss))), "rank %d has holes: %s" % (r, ss[:20])
stored = int(jobs[job]["rank_steps"])
assert stored == len(keys), "job says %d rank-steps stored, %d distinct: written twice" % (stored, len(keys))
lo = min(min(v) for v in per.values())
print(min(len(v) for v in per.values()), max(len(v) for v in per.values()), len(keys), lo)
PY
}
APORT=$(free_port)

# wait_every "description" timeout_s interval_s command...: like wait_for,
# polling every interval_s, for checks that cost a query or a process each
# (the delivery tests poll from several cases at once on a loaded machine).
wait_every() {
    local what=$1 timeout=$2 interval=$3; shift 3
    local end=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || fail "timed out after ${timeout}s waiting for $what"
        sleep "$interval"
    done
}
