#!/usr/bin/env bash
# Least privilege that works: the agent runs with exactly the capabilities of
# deploy/systemd/argus-agent.service (AmbientCapabilities and
# CapabilityBoundingSet, applied with setpriv as systemd applies them, with
# NoNewPrivileges) and its default probes; every probe runs, the uprobes on a
# real PyTorch job's libtorch attach with no failure, and the job's ranks
# (launched by torch.multiprocessing.spawn, so found only through the
# communicator uprobe) are tracked. Without CAP_SYS_ADMIN the same run has
# uprobe failures on a kernel without uprobe_multi links (the agent falls
# back to perf-event uprobes, which need it since 6.16; checked then, so the
# test shows why the unit keeps it), none where it has them.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || skip "needs root to drop to the unit's capabilities"
[[ -r /sys/kernel/btf/vmlinux ]] || skip "no BTF"
command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "no python3-torch"

unit="$REPO/deploy/systemd/argus-agent.service"
ambient=$(awk -F= '$1 == "AmbientCapabilities" {print $2}' "$unit")
bounding=$(awk -F= '$1 == "CapabilityBoundingSet" {print $2}' "$unit")
[[ -n $ambient && $ambient == "$bounding" ]] || fail "unit capabilities: '$ambient' / '$bounding'"
grep -q '^NoNewPrivileges=yes' "$unit" || fail "the unit lost NoNewPrivileges"
# "CAP_BPF CAP_PERFMON" -> "+bpf,+perfmon"
caps=$(for c in $ambient; do printf '+%s,' "$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done)
caps=${caps%,}
probes=$("$BIN/argus-agent" --print-config | awk '/^\[/ {sec=$0} sec == "[probes]" && $1 == "enable" {gsub(/"/, "", $3); print $3}')

# run_capped CAPS NAME: an agent with these capabilities only, a spawn job under it
run_capped() {
    local set=$1 name=$2 port
    APORT=$(free_port)
    setpriv --inh-caps=-all,"$set" --ambient-caps=-all,"$set" --bounding-set=-all,"$set" \
        --no-new-privs "$BIN/argus-agent" --spool.dir "$T/spool.$name" --grpc.plaintext true \
        --http.listen "127.0.0.1:$APORT" --node.name testnode --collector.address "127.0.0.1:$CPORT" \
        --cupti.socket "$T/cupti.$name.sock" --probes.enable "$probes" \
        --discovery.scan_interval 200ms --log.level info >"$T/agent.$name.log" 2>&1 &
    PIDS+=($!)
    wait_for "agent ($name) on :$APORT" 20 curl -sf "127.0.0.1:$APORT/healthz"
    port=$(free_port)
    mkdir -p "$T/pids.$name"
    env ARGUS_JOB="caps-$name" ARGUS_PIDS_DIR="$T/pids.$name" STEPS=20 OMP_NUM_THREADS=1 \
        /usr/bin/python3 "$REPO/tests/bpf/torch_spawn_job.py" "$port" >"$T/job.$name.out" 2>&1 \
        || fail "job failed: $(tail -3 "$T/job.$name.out")"
    curl -s "127.0.0.1:$APORT/metrics" >"$T/metrics.$name"
    curl -s "127.0.0.1:$APORT/healthz" >"$T/healthz.$name"
}
m() { awk -v k="$2" '$1 == k {print $2}' "$T/metrics.$1"; }

start_collector "$T/store"
run_capped "$caps" unit
for p in ${probes//,/ }; do
    [[ $(m unit "argus_agent_source_up{source=\"$p\"}") == 1 ]] \
        || fail "probe $p is not up with the unit's capabilities: $(grep -i "$p" "$T/agent.unit.log" | tail -2)"
done
[[ $(m unit 'argus_probe_uprobe_failures_total{probe="collectives"}') == 0 ]] \
    || fail "uprobe failures with the unit's capabilities: $(grep -m3 uprobe "$T/agent.unit.log")"
[[ $(m unit 'argus_probe_uprobes_attached{probe="collectives"}') -gt 0 ]] || fail "no uprobe attached"
[[ $(m unit 'argus_probe_reports_total{probe="sched"}') -gt 0 &&
    $(m unit 'argus_probe_read_errors_total{probe="sched"}') == 0 ]] \
    || fail "the sched iterator gave nothing or failed: $(grep 'probe="sched"' "$T/metrics.unit")"
[[ $(m unit 'argus_probe_communicator_inits_total{probe="collectives"}') -ge 4 ]] \
    || fail "communicator creations not seen: $(cat "$T/healthz.unit")"
! grep -q "Permission denied" "$T/agent.unit.log" || fail "$(grep -m3 'Permission denied' "$T/agent.unit.log")"
wait_for "the 4 spawned ranks at the collector" 20 bash -c \
    "[[ \$($BIN/argusctl --collector 127.0.0.1:$CPORT ranks --job caps-unit | awk 'NR > 1' | wc -l) == 4 ]]"
log "unit capabilities ($ambient): every probe up, uprobes attached, 4 ranks"

# the reason for CAP_SYS_ADMIN: without it, uprobes fail here (a kernel that
# still lets CAP_PERFMON create uprobes passes both ways: nothing to check)
run_capped "${caps/+sys_admin,/}" nosysadmin
fails=$(m nosysadmin 'argus_probe_uprobe_failures_total{probe="collectives"}')
log "without CAP_SYS_ADMIN: $fails uprobe failures on $(uname -r)"
if [[ $fails -gt 0 ]]; then
    grep -q "Permission denied" "$T/agent.nosysadmin.log" || fail "failures without a reason"
    [[ $(m nosysadmin 'argus_agent_source_up{source="collectives"}') == 0 ]] \
        || fail "collectives up although none of its uprobes attached"
    grep -q "no_rank\|communicator" "$T/healthz.nosysadmin" \
        || fail "/healthz does not say why the spawned ranks are missing: $(cat "$T/healthz.nosysadmin")"
fi
echo "agent capabilities ok"
