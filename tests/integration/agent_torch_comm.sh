#!/usr/bin/env bash
# What the real agent sends about each collective of a real PyTorch gloo DDP
# job (4 ranks, CPU, default DDP settings, no annotation; 300 steps), so that
# the collector can match a call across ranks and align clocks with it:
#   - the communicator id is the same on every rank (the group's store
#     prefix, read when the group is made), never a process-local handle;
#   - the sequence numbers are gloo's own (seq_local false) and the calls of
#     one inferred step carry the same (comm_id, name, seq) on every rank;
#   - host-only calls carry their host end (gloo's work done,
#     host_return_unix_ns): never before the last member arrived (an enqueue
#     returns before), and the ends of one call agree across ranks (one clock
#     here) far better than its arrivals (median spread under 1/2.5 of theirs:
#     an end read at the enqueue would spread like the arrivals; 4 ranks on 2
#     cores see their ends a scheduler slice apart, ~3 ms against 10-13 ms of
#     arrivals, measured 2026-12-06 with this session's and the previous
#     session's agent alike).
# The steps themselves are checked as in agent_torch_steps.sh.
# test-cpu: all: a real PyTorch job, 4 ranks on all cores
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/bpf/torch_steps_case.sh"
TORCH_STEPS_GATE=1 torch_steps_case 1 0
curl -s "127.0.0.1:$APORT/metrics" | grep -E "^argus_probe_(communicators_named|works_done|memory_read_errors)_total" |
    tee "$T/probe_metrics.txt"
/usr/bin/python3 - "$T/steps.json" <<'PY' || fail "collectives disagree across ranks"
import collections, json, statistics, sys

steps = json.load(open(sys.argv[1]))["steps"]
calls = collections.defaultdict(dict)  # (step, comm, name, seq) -> rank -> collective
comms, local, ends, no_end = set(), 0, [], 0
for s in steps:
    for c in s.get("collectives", []):
        comm = int(str(c.get("comm_id", "0")), 16)
        comms.add(comm)
        local += bool(c.get("seq_local"))
        key = (int(s["step"]), comm, c.get("name_id"), int(c.get("seq", 0)))
        calls[key][s.get("rank", 0)] = c
        arr, ret = int(c.get("host_arrival_unix_ns", 0)), int(c.get("host_return_unix_ns", 0))
        if not ret:
            no_end += 1
        elif ret < arr:
            sys.exit("host end before arrival: %s" % c)
n = sum(len(v) for v in calls.values())
print("calls %d, communicator ids %s, seq_local %d, without end %d" %
      (n, [hex(c) for c in comms], local, no_end))
if comms != {c for c in comms if c} or len(comms) != 1:
    sys.exit("want one nonzero communicator id for the default group, got %s" % comms)
if local:
    sys.exit("%d calls with local sequence numbers (gloo numbers every one)" % local)
whole = [v for v in calls.values() if len(v) == 4]
print("calls matched on all 4 ranks by (step, comm, name, seq): %d of %d keys" %
      (len(whole), len(calls)))
if len(whole) < 0.95 * len(calls):
    sys.exit("the same call does not carry the same key on every rank")
if no_end > 0.05 * n:
    sys.exit("%d of %d calls without a host end" % (no_end, n))
whole_ends = [v for v in whole if all(int(c.get("host_return_unix_ns", 0)) for c in v.values())]
before, spread, arrivals = 0, [], []
for v in whole_ends:
    ends = [int(c["host_return_unix_ns"]) for c in v.values()]
    arr = [int(c["host_arrival_unix_ns"]) for c in v.values()]
    before += sum(e < max(arr) for e in ends)  # done before the last member came: no end
    spread.append(max(ends) - min(ends))
    arrivals.append(max(arr) - min(arr))
med = lambda a: statistics.median(a) / 1e6
print("calls with all 4 ends: %d; ends before the call's last arrival: %d; spread across ranks, "
      "median: ends %.3f ms, arrivals %.3f ms" % (len(whole_ends), before, med(spread), med(arrivals)))
if before > 0.01 * 4 * len(whole_ends):
    sys.exit("host ends before the last member arrived: enqueue returns, not ends")
if med(spread) * 2.5 > med(arrivals):
    sys.exit("host ends of one call are not one instant across ranks")
PY
echo "torch collectives ok: one communicator id, gloo's sequence numbers, host ends"
