#!/usr/bin/env bash
# What the hot standby costs the agent (issue 28 target: at most 2x the
# bytes, +0.2% of a core): bench_agent.sh (8 ranks x 10 steps/s, MODE
# records: step records replayed, i.e. the delivery path alone, else the
# Kineto trace) with one collector and with a pair (STANDBY=1), alternated
# ROUNDS times (2) so that drift on this noisy machine falls on both; prints
# each run's CPU and bytes and the means side by side.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-2}
out=$(mktemp /tmp/argus-bench-standby.XXXXXX)
trap 'rm -f "$out"' EXIT
for ((r = 0; r < ROUNDS; r++)); do
    for sb in 0 1; do
        STANDBY=$sb DURATION=${DURATION:-20} MODE=${MODE:-records} "$HERE/bench_agent.sh" \
            | tee /dev/stderr | sed "s/^/standby=$sb /" >>"$out"
    done
done 2>&1 | grep -E "agent CPU|collectors received"
/usr/bin/python3 - "$out" <<'PY'
import re, sys
cpu, byt = {0: [], 1: []}, {0: [], 1: []}
for l in open(sys.argv[1]):
    sb = int(l.split()[0].split("=")[1])
    m = re.search(r"agent CPU ([0-9.]+)% of one core", l)
    if m: cpu[sb].append(float(m.group(1)))
    m = re.search(r"\(([0-9]+) bytes per step record\)", l)
    if m: byt[sb].append(float(m.group(1)))
mean = lambda v: sum(v) / len(v) if v else float("nan")
print("standby off: agent CPU %.2f%% of a core, %.0f bytes per step record received" % (mean(cpu[0]), mean(byt[0])))
print("standby on:  agent CPU %.2f%% of a core, %.0f bytes per step record received" % (mean(cpu[1]), mean(byt[1])))
print("standby costs %+.2f%% of a core and %.2fx the bytes (target: +0.2%%, 2x)" % (
    mean(cpu[1]) - mean(cpu[0]), mean(byt[1]) / mean(byt[0]) if byt[0] else float("nan")))
PY
