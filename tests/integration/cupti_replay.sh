#!/usr/bin/env bash
# libargus-cupti.so across processes: the agent driver (build/tests/cupti/
# cupti-agent, source_cupti) and a stand-in CUDA app loading the library
# against the CUPTI test double, for each Kineto trace in ../shared/data/kineto.
# Checks, against the trace read here with python: every GPU record arrives
# (count, distinct kernel names, distinct launch shapes: args.grid and
# args.block, what KernelGroup.work_id is made of), every ProfilerStep is a
# STEP, no drops.
set -u
cd "$(dirname "$0")/../.."
B=${ARGUS_BUILD:-build}
DATA=../shared/data/kineto
LIB=$B/lib/libargus-cupti.so DBL=$B/tests/libcupti-double.so
APP=$B/tests/cupti/cupti-app AGENT=$B/tests/cupti/cupti-agent
for f in "$LIB" "$DBL" "$APP" "$AGENT"; do
    [[ -e $f ]] || { echo "skip: $f not built (no CUDA headers?)"; exit 77; }
done
ls "$DATA"/*.json.gz >/dev/null 2>&1 || { echo "skip: no Kineto traces in $DATA"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 for the oracle"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for trace in "$DATA"/*.json.gz; do
    name=$(basename "$trace")
    read -r gpu kernels names steps shapes < <(python3 - "$trace" <<'PY'
import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
k = [e for e in ev if e.get("cat") == "kernel"]
steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
shapes = {(tuple(e["args"]["grid"]), tuple(e["args"]["block"])) for e in k
          if "grid" in e.get("args", {}) and "block" in e.get("args", {})}
print(len(gpu), len(k), len({e["name"] for e in k}), len(steps), len(shapes))
PY
)
    sock=$tmp/$name.sock
    "$AGENT" "$sock" 20 -x 1 >"$tmp/agent.out" 2>&1 &
    apid=$!
    for _ in $(seq 100); do grep -q listening "$tmp/agent.out" 2>/dev/null && break; sleep 0.05; done
    RANK=0 ARGUS_AGENT_SOCKET=$sock ARGUS_CUPTI_LIB=$(realpath "$DBL") "$APP" "$LIB" replay "$trace" >"$tmp/app.out" 2>&1
    wait $apid
    got_gpu=$(grep -c '^K ' "$tmp/agent.out")
    got_k=$(awk '$1=="K" && $6==0' "$tmp/agent.out" | wc -l)
    got_names=$(awk '$1=="K" && $6==0 {$1=$2=$3=$4=$5=$6=$7=""; print}' "$tmp/agent.out" | sort -u | wc -l)
    got_shapes=$(awk '$1=="K" && $6==0 && $7!="00000000" {print $7}' "$tmp/agent.out" | sort -u | wc -l)
    got_steps=$(grep -c '^S ' "$tmp/agent.out")
    summary=$(grep '^summary' "$tmp/agent.out")
    echo "$name: gpu $got_gpu/$gpu kernels $got_k/$kernels names $got_names/$names shapes $got_shapes/$shapes steps $got_steps/$steps phases $(grep -c '^P ' "$tmp/agent.out")"
    echo "  $summary"
    if [[ $got_gpu != "$gpu" || $got_k != "$kernels" || $got_names != "$names" || $got_steps != "$steps" ||
        $got_shapes != "$shapes" || $shapes == 0 ]] ||
        ! grep -q 'no_buffer=0 ring_full=0 no_agent=0' <<<"$summary"; then
        echo "  FAIL"; fail=1
    fi
done
exit $fail
