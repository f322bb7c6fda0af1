#!/usr/bin/env bash
# make demo on a real job (root, python3-torch, BTF and a cgroup with the cpu
# controller; tests/e2e/demo.sh checks them first). Starts a collector and an
# agent with their default settings and every default probe, runs a real
# PyTorch DDP job (tests/e2e/demo_job.py: CPU, gloo, 4 ranks, default DDP
# buckets, no annotation, launched with torch.multiprocessing.spawn and the
# rank set inside each child, or DEMO_LAUNCH=exec: one process per rank with
# RANK at exec as torchrun does), lets it train, then caps one rank's CPU from
# outside: its pid goes into a cgroup this script makes, with a CPU quota.
# It prints what argus found: the first straggler report naming that rank,
# with its evidence and id, and the rank x step heatmap. Nothing is faked: it
# exits 1 when no report names the rank within DEMO_DEADLINE seconds of the
# throttle. Every process and cgroup it made is gone when it exits (also on
# failure and Ctrl-C).
#
#   DEMO_RANK (2)      the rank slowed
#   DEMO_QUOTA (auto)  its CPU quota, % of one CPU; auto: a third of what it used
#                      while training before, 5-25% (a loaded machine leaves a
#                      rank less than a fixed quota would)
#   DEMO_WARMUP (40)   job steps before     DEMO_DEADLINE (60) seconds for a report after it
#   DEMO_LAUNCH (spawn or exec)             ARGUS_DEMO_OUT     where the heatmap goes
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/e2e/cgroup.sh
BIN=${ARGUS_BUILD:-build}/bin
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the demo's collector is plaintext on loopback
SLOW=${DEMO_RANK:-2}
QUOTA=${DEMO_QUOTA:-auto}
WARMUP=${DEMO_WARMUP:-40}
DEADLINE=${DEMO_DEADLINE:-60}
LAUNCH=${DEMO_LAUNCH:-spawn}
JOB=torch-demo
out=${ARGUS_DEMO_OUT:-$PWD/build/demo}
[[ $SLOW =~ ^[0-3]$ ]] || { echo "demo: DEMO_RANK must be 0-3, not '$SLOW'" >&2; exit 2; }
[[ $QUOTA == auto ]] || { [[ $QUOTA =~ ^[0-9]+$ ]] && ((QUOTA >= 1 && QUOTA <= 100)); } ||
    { echo "demo: DEMO_QUOTA must be auto or a percentage 1-100, not '$QUOTA'" >&2; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ && $DEADLINE =~ ^[0-9]+$ ]] ||
    { echo "demo: DEMO_WARMUP and DEMO_DEADLINE must be whole numbers" >&2; exit 2; }
[[ $LAUNCH == spawn || $LAUNCH == exec ]] ||
    { echo "demo: DEMO_LAUNCH must be spawn or exec, not '$LAUNCH'" >&2; exit 2; }
cg_find || { echo "demo: $CG_WHY" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d /tmp/argus-demo.XXXXXX)
daemons=() job_pgid=""

# stop PID: SIGTERM, then SIGKILL after 10 s; reaps it.
stop() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
stop_job() {
    [[ -n $job_pgid ]] || return 0
    kill -TERM -- "-$job_pgid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$job_pgid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$job_pgid" 2>/dev/null || true
    wait "$job_pgid" 2>/dev/null || true
    job_pgid=""
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_job
    cg_remove
    for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do stop "${daemons[i]}"; done
    if ((rc != 0)) && [[ -d $work ]]; then
        mkdir -p "$out/logs" && cp "$work"/*.log "$work"/*.json "$work"/*.metrics "$work"/job.out "$out/logs/" 2>/dev/null || true
        echo "demo: logs kept in $out/logs" >&2
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cport=$(port) hport=$(port) aport=$(port) mport=$(port)
ctl() { "$BIN/argusctl" --collector "127.0.0.1:$cport" "$@"; }
metric() { curl -s "127.0.0.1:$aport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# cpu_ticks PID: user + system clock ticks of PID, all its threads
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# job_steps RANK: how many steps RANK of the job has finished (its own log)
job_steps() { grep -c "^JOBSTEP rank=$1 " "$work/job.out" 2>/dev/null || true; }
die() {
    echo "demo: $*" >&2
    exit 1
}
# wait_until SECONDS WHAT COMMAND...: poll every 0.5 s
wait_until() {
    local limit=$1 what=$2 end=$((SECONDS + $1))
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || die "timed out after ${limit}s waiting for $what"
        sleep 0.5
    done
}

echo "== argus demo on a real PyTorch job (4 ranks, CPU, gloo, DDP, no annotation)"
"$BIN/argus-collector" --grpc.listen "127.0.0.1:$cport" --grpc.plaintext true --http.listen "127.0.0.1:$hport" \
    --store.dir "$work/store" >"$work/collector.log" 2>&1 &
daemons+=($!)
wait_until 30 "the collector" ctl --timeout 1s jobs
echo "   collector on 127.0.0.1:$cport (default settings; log $work/collector.log)"
"$BIN/argus-agent" --collector.address "127.0.0.1:$cport" --grpc.plaintext true --http.listen "127.0.0.1:$aport" \
    --spool.dir "$work/spool" --cupti.socket "$work/cupti.sock" >"$work/agent.log" 2>&1 &
daemons+=($!)
wait_until 60 "the agent's /healthz" curl -sf "127.0.0.1:$aport/healthz"
probes=$(curl -s "127.0.0.1:$aport/metrics" | awk '$1 ~ /^argus_agent_source_up/ && $2 == 1' |
    sed -n 's/.*source="\([^"]*\)".*/\1/p' | paste -sd, -)
echo "   agent with its default probes, up: ${probes:-none}"

mkdir -p "$work/pids"
export ARGUS_JOB=$JOB ARGUS_PIDS_DIR=$work/pids OMP_NUM_THREADS=1
if [[ $LAUNCH == spawn ]]; then
    echo "== the job: torch.multiprocessing.spawn, each child sets RANK in its os.environ"
    setsid /usr/bin/python3 tests/e2e/demo_job.py "$mport" >"$work/job.out" 2>&1 &
else
    echo "== the job: one process per rank, RANK and WORLD_SIZE at exec (as torchrun)"
    setsid bash -c 'for r in 0 1 2 3; do RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 /usr/bin/python3 \
        tests/e2e/demo_job.py '"$mport"' & done; wait' >"$work/job.out" 2>&1 &
fi
job_pgid=$!
wait_until 120 "4 ranks to start" bash -c "[[ \$(ls $work/pids | wc -l) == 4 ]]"
wait_until 60 "the 4 ranks of $JOB at the collector (the agent's log: $work/agent.log)" \
    bash -c "[[ \$($BIN/argusctl --collector 127.0.0.1:$cport ranks --job $JOB | awk 'NR > 1' | wc -l) == 4 ]]"
echo "   the agent found the 4 ranks (pids $(for r in 0 1 2 3; do printf "%s " "$(cat "$work/pids/rank.$r")"; done)); training $WARMUP steps before the slowdown"
pid=$(cat "$work/pids/rank.$SLOW")
c0=$(cpu_ticks "$pid") s0=$SECONDS
wait_until 300 "$WARMUP steps of the job" bash -c "(( \$(grep -c '^JOBSTEP rank=$SLOW ' $work/job.out) >= $WARMUP ))"
while ((SECONDS < s0 + 5)); do sleep 0.5; done
used=$((($(cpu_ticks "$pid") - c0) * 100 / $(getconf CLK_TCK) / (SECONDS - s0)))
if [[ $QUOTA == auto ]]; then
    QUOTA=$((used / 3 < 5 ? 5 : used / 3 > 25 ? 25 : used / 3))
fi
echo "   rank $SLOW used ${used}% of one CPU while training"
cg_create "$QUOTA" || die "$CG_WHY"
cg_add "$pid"
t0=$(date +%s%N)
grep -q "argus-demo.$$" "/proc/$pid/cgroup" || die "pid $pid is not in $CG_DIR: $(cat "/proc/$pid/cgroup")"
at=$(job_steps "$SLOW")
echo "== $(date +%T) rank $SLOW (pid $pid) now in cgroup $CG_DIR, cpu quota $(cg_quota) us"
echo "   (${QUOTA}% of one CPU) from its step $at; waiting up to ${DEADLINE}s for a report naming it"

# found: the first report made after the throttle in which a suspect names
# $SLOW and pages (a collector that does not say what pages: the suspect
# persisted in 24 of 40 steps, its default M of N); prints "ID CREATED_NS"
found() {
    ctl --json stragglers --job "$JOB" >"$work/reports.json" 2>/dev/null || return 1
    /usr/bin/python3 - "$work/reports.json" "$SLOW" "$t0" >"$work/found" <<'PY'
import json, sys
reports, slow, t0 = json.load(open(sys.argv[1]))["reports"], int(sys.argv[2]), int(sys.argv[3])
def pages(s):
    return s["pages"] if "pages" in s else s["persisted"] * 40 >= 24 * max(s["window"], 1)
for r in reports:
    if int(r["created_unix_ns"]) > t0 and any(s["rank"] == slow and pages(s) for s in r["suspects"]):
        print(r["id"], r["created_unix_ns"])
        sys.exit(0)
sys.exit(1)
PY
}
end=$((SECONDS + DEADLINE)) next=$((SECONDS + 10)) ok=""
while ((SECONDS < end)); do
    if found; then ok=1; break; fi
    if ((SECONDS >= next)); then
        next=$((SECONDS + 10))
        last=$(ctl jobs | awk -v j="$JOB" '$1 == j {print $4}')
        echo "   $(date +%T) +$((($(date +%s%N) - t0) / 1000000000))s: job at step $(job_steps "$SLOW"), argus at step ${last:-?}, $(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["reports"]))' "$work/reports.json" 2>/dev/null || echo 0) reports"
    fi
    sleep 1
done

echo
echo "== the job's own step time (its log), median per rank: before -> after the slowdown"
/usr/bin/python3 - "$work/job.out" "$at" <<'PY'
import statistics, sys
at, steps = int(sys.argv[2]), {}
for line in open(sys.argv[1]):
    if line.startswith("JOBSTEP"):
        kv = dict(x.split("=") for x in line.split()[1:])
        steps.setdefault(int(kv["rank"]), []).append((int(kv["step"]), int(kv["dur_ns"]) / 1e6))
for r in sorted(steps):
    before = [d for s, d in steps[r] if 5 <= s < at]
    after = [d for s, d in steps[r] if s >= at + 2]
    print("   rank %d: %.0f ms -> %s (%d steps)" % (r, statistics.median(before) if before else 0,
          "%.0f ms" % statistics.median(after) if after else "-", len(steps[r])))
PY
echo "   the kernel throttled rank $SLOW's cgroup $(cg_throttled) since"
echo
echo "== what argus reported since the slowdown (suspects by rank, level, cause; pages or not)"
/usr/bin/python3 - "$work/reports.json" "$t0" <<'PY' || true
import collections, json, sys
reports, t0 = json.load(open(sys.argv[1]))["reports"], int(sys.argv[2])
tally = collections.Counter()
for r in reports:
    if int(r["created_unix_ns"]) > t0:
        for s in r["suspects"]:
            who = "job" if s["rank"] == 4294967295 else "rank %d" % s["rank"]
            page = {True: "pages", False: "finding"}.get(s.get("pages"), "persisted %d/%d" % (s["persisted"], s["window"]))
            tally[(who, s["level"], s["cause"], page)] += 1
for (who, level, cause, page), n in sorted(tally.items()):
    print("   %-7s %-13s %-11s %-16s x%d" % (who, level.replace("LEVEL_", ""), cause.replace("CAUSE_", ""), page, n))
print("   %d reports before, %d since" % (sum(int(r["created_unix_ns"]) <= t0 for r in reports),
                                          sum(int(r["created_unix_ns"]) > t0 for r in reports)))
PY
echo
echo "== argusctl jobs"
ctl jobs
echo
echo "== argusctl stragglers --job $JOB"
ctl stragglers --job "$JOB" >"$work/stragglers.txt" || true
head -n 40 "$work/stragglers.txt"
(($(wc -l <"$work/stragglers.txt") <= 40)) || echo "   ... $(($(wc -l <"$work/stragglers.txt") - 40)) more lines"
curl -s "127.0.0.1:$aport/metrics" >"$work/agent.metrics" || true
echo
ctl heatmap --job "$JOB" -o "$out/heatmap.svg"
if [[ -z $ok ]]; then
    echo "== no report named rank $SLOW within ${DEADLINE}s of its slowdown (reports above are all argus found)"
    exit 1
fi
read -r id created <"$work/found"
echo "== argusctl report $id"
ctl report "$id"
echo
echo "== argusctl cost: where the GPU-hours went (reports of the last 7 days, by node;"
echo "   GPU-hours lost is the step time the suspects cost x ranks, one GPU per rank)"
ctl cost
echo
echo "== rank $SLOW named in report $id, $(((created - t0) / 1000000000))s after its CPU was capped"
echo "   heatmap: $out/heatmap.svg; everything started (processes, cgroup) is being stopped"
