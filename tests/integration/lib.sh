# Helpers for integration tests (sourced). Each test gets a private temp
# directory and free loopback ports; everything it starts is killed on exit.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${ARGUS_BUILD:-$REPO/build}/bin
T=$(mktemp -d /tmp/argus-it.XXXXXX)
# Tests talk plaintext on loopback unless they say otherwise (tls_*.sh):
# argusctl takes this from the environment, the daemons get the flag below.
export ARGUS_GRPC_PLAINTEXT=true
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for m in $(awk -v t="$T" '$2 ~ "^"t {print $2}' /proc/mounts); do umount -l "$m" 2>/dev/null; done
    [[ -n ${KEEP:-} ]] || rm -rf "$T"
    release_ports
}
trap cleanup EXIT

# fail WHY: the test fails; a test's on_fail function (when it defines one)
# prints what would explain it first (once: a failure inside it only exits)
fail() {
    echo "FAIL: $*"
    if declare -F on_fail >/dev/null && [[ -z ${IN_ON_FAIL:-} ]]; then
        IN_ON_FAIL=1 on_fail 2>&1 | sed 's/^/  | /' | tail -n 80
    fi
    exit 1
}
skip() { echo "SKIP: $*"; exit 77; }
log() { echo "[$(date +%T)] $*"; }

# free_port: a free TCP port on 127.0.0.1 that no other test holds. Tests run
# side by side (tests/run.sh), and a port is taken some time after it is
# picked, so each is reserved for this script until it exits (a directory
# per port under PORT_DIR, holding the script's pid) and picked in
# 10000-19999: below the kernel's ephemeral range (where outgoing connections
# and port-0 binds get theirs) and apart from the torch jobs' rendezvous
# ports (20000 and up). A reservation whose script is gone is taken over.
PORT_DIR=/tmp/argus-test-ports
free_port() {
    local p owner i
    mkdir -p "$PORT_DIR"
    for ((i = 0; i < 1000; i++)); do
        p=$((10000 + RANDOM % 10000))
        if ! mkdir "$PORT_DIR/$p" 2>/dev/null; then
            owner=$(cat "$PORT_DIR/$p/pid" 2>/dev/null) || continue
            kill -0 "$owner" 2>/dev/null && continue
            # the owner is gone: take it over if nobody else did meanwhile
            mv "$PORT_DIR/$p" "$PORT_DIR/$p.stale.$$" 2>/dev/null || continue
            rm -rf "$PORT_DIR/$p.stale.$$"
            mkdir "$PORT_DIR/$p" 2>/dev/null || continue
        fi
        echo $$ >"$PORT_DIR/$p/pid"
        if /usr/bin/python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1])))' "$p" 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    fail "no free port in 10000-19999"
}

# release_ports: drops this script's reservations (cleanup calls it).
release_ports() {
    local d
    for d in "$PORT_DIR"/*/; do
        [[ $(cat "${d}pid" 2>/dev/null) == "$$" ]] && rm -rf "$d"
    done
    return 0
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
    start_collector_on "$CPORT" "$HPORT" "$@"
    COLLECTOR_PID=$COLLECTOR_ON_PID
}

# start_collector_on GRPC_PORT HTTP_PORT DIR [extra flags...]: one more
# collector (an HA pair's second, a set's members); sets COLLECTOR_ON_PID.
start_collector_on() {
    local cport=$1 hport=$2 dir=$3; shift 3
    "$BIN/argus-collector" --grpc.listen "127.0.0.1:$cport" --http.listen "127.0.0.1:$hport" \
        --store.dir "$dir" --grpc.plaintext true "$@" >>"$T/collector.log" 2>&1 &
    COLLECTOR_ON_PID=$!
    PIDS+=("$COLLECTOR_ON_PID")
    wait_for "collector on :$cport" 10 "$BIN/argusctl" --collector "127.0.0.1:$cport" --timeout 1s jobs
}

# start_am_cluster: a webhook receiver (alerts_receiver.py, notifications in
# $T/notes.jsonl) and a real two-node Alertmanager cluster (Debian's
# prometheus-alertmanager, gossip on loopback) routing to it; skips the test
# when the binary is missing. Sets AM_SINK (both members, the collectors'
# alerts.alertmanager value) and AM_WEB (their HTTP ports).
start_am_cluster() {
    local am rx i peer
    am=$(command -v prometheus-alertmanager || command -v alertmanager || true)
    [[ -n $am ]] || skip "no prometheus-alertmanager binary (apt-get install prometheus-alertmanager)"
    rx=$(free_port)
    /usr/bin/python3 "$REPO/tests/integration/alerts_receiver.py" "$rx" "$T/notes.jsonl" 0 \
        >"$T/receiver.log" 2>&1 &
    PIDS+=($!)
    cat >"$T/am.yml" <<YML
route:
  receiver: hook
  group_by: [job, cause, subject]
  group_wait: 1s
  group_interval: 5m
  repeat_interval: 4h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:$rx/
YML
    AM_WEB=($(free_port) $(free_port))
    local gossip=($(free_port) $(free_port))
    for i in 0 1; do
        peer=()
        ((i == 1)) && peer=(--cluster.peer="127.0.0.1:${gossip[0]}")
        "$am" --config.file="$T/am.yml" --storage.path="$T/am$i" \
            --web.listen-address="127.0.0.1:${AM_WEB[$i]}" \
            --cluster.listen-address="127.0.0.1:${gossip[$i]}" \
            --cluster.advertise-address="127.0.0.1:${gossip[$i]}" \
            --cluster.peer-timeout=5s "${peer[@]}" >>"$T/am$i.log" 2>&1 &
        PIDS+=($!)
        wait_for "alertmanager $i" 30 curl -sf "127.0.0.1:${AM_WEB[$i]}/-/ready"
    done
    wait_for "the two Alertmanagers in one cluster" 30 bash -c \
        "[[ \$(curl -sf 127.0.0.1:${AM_WEB[0]}/api/v2/status | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"cluster\"][\"peers\"]))') == 2 ]]"
    AM_SINK="http://127.0.0.1:${AM_WEB[0]},http://127.0.0.1:${AM_WEB[1]}"
}

# am_firing JOB [ALERTNAME]: how many firing notifications for JOB (of that
# alertname only: ArgusStraggler, ArgusBlind) the receiver got.
am_firing() {
    [[ -s $T/notes.jsonl ]] || { echo 0; return; }
    /usr/bin/python3 -c 'import json,sys
notes = [json.loads(l)["body"] for l in open(sys.argv[1])]
print(sum(1 for b in notes for a in b["alerts"] if a["status"] == "firing" and a["labels"].get("job") == sys.argv[2]
          and sys.argv[3] in ("", a["labels"].get("alertname"))))' "$T/notes.jsonl" "$1" "${2:-}"
}

ctl() { "$BIN/argusctl" --collector "127.0.0.1:$CPORT" "$@"; }

# json_get FILE KEY: a top-level value of a one-line JSON object.
json_get() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

CPORT=$(free_port)
HPORT=$(free_port)

TRACE=${ARGUS_TRACE:-$REPO/../shared/data/kineto/trace_filter__sampled_rank-0.json.gz}

# isolated CMD...: CMD in a PID namespace of its own with its own /proc
# (same network): an agent there discovers no process of the tests running
# beside it (their ranks would be its jobs too, and a collector set would
# route its batches by them). A shell is the namespace's init and CMD its
# child, so CMD gets signals as anywhere (an init ignores those it has no
# handler for, and the agent takes them by signalfd). Root only; killing the
# unshare process kills everything in it. Use with &, then isolated_pid.
isolated() { unshare --pid --fork --mount-proc --kill-child bash -c '"$@" & wait $!' isolated "$@"; }

# isolated_pid PID: the pid of the command under PID (the isolated call
# started with &): the end of its chain of first children, once that is
# neither unshare nor the namespace's init shell.
isolated_pid() {
    local i p c
    for ((i = 0; i < 100; i++)); do
        p=$1
        while c=$(pgrep -P "$p" | head -1) && [[ -n $c ]]; do p=$c; done
        case $(ps -o comm= -p "$p" 2>/dev/null) in
        unshare | bash | "") sleep 0.05 ;;
        *) echo "$p"; return 0 ;;
        esac
    done
    fail "no process under unshare $1"
}

# start_agent SPOOLDIR [extra flags...]: an agent on $APORT (HTTP) sending to
# $CPORT; sets AGENT_PID. In a PID namespace of its own (isolated) when
# AGENT_ISOLATE=1, and by default when it replays (--replay.*: its ranks are
# the replay's; seeing the real ranks of the tests beside it, a torch job,
# would put them into its batches, which their own agent's ranks refuse);
# AGENT_ISOLATE=0: never. AGENT_WAIT_PID: the shell's child to `wait` for
# the agent's exit status (unshare passes it on).
start_agent() {
    local dir=$1 wrap=() iso=${AGENT_ISOLATE:-}; shift
    [[ -z $iso && " $* " == *" --replay."* ]] && iso=1
    [[ $iso == 1 ]] && wrap=(isolated)
    "${wrap[@]}" "$BIN/argus-agent" --collector.address "127.0.0.1:$CPORT" --spool.dir "$dir" --grpc.plaintext true \
        --http.listen "127.0.0.1:$APORT" --node.name testnode --collector.backoff_max 1s --cupti.socket "$T/cupti.sock" --probes.enable "" "$@" \
        >>"$T/agent.log" 2>&1 &
    AGENT_PID=$! AGENT_WAIT_PID=$!
    PIDS+=("$AGENT_PID")
    if [[ $iso == 1 ]]; then
        AGENT_PID=$(isolated_pid "$AGENT_PID")
        PIDS+=("$AGENT_PID") # killed, its namespace ends with it
    fi
    wait_for "agent on :$APORT" 10 curl -sf "127.0.0.1:$APORT/healthz"
}

# metric PORT NAME: the value of an unlabelled sample.
metric() { curl -s "127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

# check_job JOB RANKS: every rank's steps are 0..K-1 with no hole, stored
# once (job rank_steps == distinct keys). Prints "K_min K_max total".
check_job() {
    # files of this call only: cases running side by side check at once
    local out
    out=$(mktemp -d "$T/check.XXXXXX")
    ctl steps --job "$1" --limit 100000 >"$out/steps.txt" || fail "argusctl steps --job $1"
    ctl --json jobs >"$out/jobs.json"
    /usr/bin/python3 - "$out/steps.txt" "$out/jobs.json" "$1" "$2" <<'PY'
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

# wait_stable "description" timeout_s still_s command...: polls the
# command's output until it has not changed for still_s seconds (a counter
# that has stopped growing), instead of a fixed sleep that a loaded machine
# outlasts.
wait_stable() {
    local what=$1 timeout=$2 still=$3; shift 3
    local end=$((SECONDS + timeout)) last now since
    last=$("$@" 2>/dev/null)
    since=${EPOCHREALTIME/./} # microseconds, without a fork
    while ((${EPOCHREALTIME/./} - since < still * 1000000)); do
        ((SECONDS < end)) || fail "timed out after ${timeout}s waiting for $what"
        sleep 0.1
        now=$("$@" 2>/dev/null)
        [[ $now == "$last" ]] || { last=$now; since=${EPOCHREALTIME/./}; }
    done
}

# CPU quotas through cgroups, to slow a process from outside (the way a noisy
# neighbour or a container limit does). cgroup v2 with the cpu controller
# (cpu.max), else the v1 cpu hierarchy (cpu.cfs_quota_us). A test that makes
# groups removes them on exit with cgroup_remove_all (after its processes are
# killed): call it from its own EXIT trap.
CGROUPS=()

# cgroup_cpu_parent: prints "v2 DIR" or "v1 DIR", the directory a CPU-limited
# group can be made under; prints why not and returns 1 when there is none.
cgroup_cpu_parent() {
    local v2=/sys/fs/cgroup v1
    if [[ -r $v2/cgroup.controllers ]] && grep -qw cpu "$v2/cgroup.controllers"; then
        if ! grep -qw cpu "$v2/cgroup.subtree_control" && ! echo +cpu >"$v2/cgroup.subtree_control"; then
            echo "cannot enable the cpu controller in $v2/cgroup.subtree_control"
            return 1
        fi
        echo "v2 $v2"
        return 0
    fi
    for v1 in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct; do
        [[ -w $v1/cpu.cfs_quota_us || -w $v1/cgroup.procs ]] && { echo "v1 $v1"; return 0; }
    done
    echo "no cgroup v2 cpu controller and no v1 cpu hierarchy under /sys/fs/cgroup"
    return 1
}

# cgroup_cpu_limit NAME QUOTA_US PERIOD_US PID: makes the group NAME (unique
# per test: the test's pid is appended), gives it QUOTA_US of CPU time every
# PERIOD_US and moves PID, every thread of it, in. Sets CGROUP_DIR to the
# group's directory; returns 1 with the reason on stderr when that fails.
# Not in $(...): the group must be remembered for cgroup_remove_all.
cgroup_cpu_limit() {
    local name=$1 quota=$2 period=$3 pid=$4 where kind parent dir
    where=$(cgroup_cpu_parent) || { echo "$where" >&2; return 1; }
    read -r kind parent <<<"$where"
    dir=$parent/argus-test-$name-$$
    mkdir "$dir" || return 1
    CGROUPS+=("$dir")
    if [[ $kind == v2 ]]; then
        echo "$quota $period" >"$dir/cpu.max" || return 1
    else
        echo "$period" >"$dir/cpu.cfs_period_us" && echo "$quota" >"$dir/cpu.cfs_quota_us" || return 1
    fi
    echo "$pid" >"$dir/cgroup.procs" || return 1
    grep -qx "$pid" "$dir/cgroup.procs" || { echo "pid $pid not in $dir" >&2; return 1; }
    CGROUP_DIR=$dir
}

# cgroup_remove_all: kills what is left in the test's groups (only processes
# the test started can be there) and removes the groups (waits up to 10 s for
# them to empty).
cgroup_remove_all() {
    local dir p end
    for dir in "${CGROUPS[@]}"; do
        end=$((SECONDS + 10))
        # a killed task can hold the group a moment after it left cgroup.procs
        while [[ -d $dir ]] && ! rmdir "$dir" 2>/dev/null && ((SECONDS < end)); do
            while read -r p; do kill -9 "$p" 2>/dev/null; done <"$dir/cgroup.procs"
            sleep 0.1
        done
        [[ ! -d $dir ]] || echo "could not remove cgroup $dir" >&2
    done
    CGROUPS=()
}
