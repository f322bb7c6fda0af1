#!/usr/bin/env bash
# argusctl compare on a regression pair: two small Kineto traces written here
# (2 ranks x 6 steps, the same kernels and phases), the second with one kernel
# ("gemm_slow_me") twice as slow, imported as jobs ctl and test: compare puts
# that kernel first among the top changes, in the table and in --json, with a
# W1 distance near its slowdown; two step ranges of one job compare too.
source "$(dirname "$0")/lib.sh"

/usr/bin/python3 - "$T" <<'PY' || fail "could not write the traces"
import gzip, json, sys
out = sys.argv[1]
KERNELS = {"gemm_slow_me": 3000, "elementwise_add": 400, "layernorm_fwd": 800, "softmax": 600}
def trace(rank, slow):
    ev, t, corr = [], 1_000_000, 1
    for step in range(10, 16):
        start = t
        phases = []
        for phase in ("forward", "backward", "optimizer"):
            p0 = t
            for name, dur in KERNELS.items():
                for i in range(4):
                    d = dur * (2 if slow and name == "gemm_slow_me" else 1) + 7 * i + rank
                    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                               "ts": t, "dur": 5, "args": {"correlation": corr}})
                    ev.append({"ph": "X", "cat": "kernel", "name": name, "ts": t + 10, "dur": d,
                               "args": {"stream": 7, "device": rank, "correlation": corr}})
                    corr += 1
                    t += d + 20
            phases.append({"ph": "X", "cat": "user_annotation", "name": f"## {phase} ##",
                           "ts": p0, "dur": t - p0})
        ev += phases
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                   "ts": start, "dur": t - start + 50})
        t += 100
    return {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2},
            "traceEvents": ev}
for job, slow in (("ctl", False), ("test", True)):
    for rank in (0, 1):
        with gzip.open(f"{out}/{job}-{rank}.json.gz", "wt") as f:
            json.dump(trace(rank, slow), f)
PY
start_collector "$T/store"
for job in ctl test; do
    ctl import-kineto --job "$job" "$T/$job-0.json.gz" "$T/$job-1.json.gz" >"$T/$job.out" 2>&1 ||
        fail "import $job: $(cat "$T/$job.out")"
done
ctl compare --job ctl --job test >"$T/cmp.txt" 2>&1 || fail "compare: $(cat "$T/cmp.txt")"
cat "$T/cmp.txt"
grep -A1 "^top changes" "$T/cmp.txt" | grep -Eq "^  1\. kernel gemm_slow_me: mean 3\.[0-9]+ -> 6\.[0-9]+ ms \(\+100%\)" ||
    fail "gemm_slow_me is not the first change"
ctl compare --json --job ctl --job test >"$T/cmp.json" || fail "compare --json"
/usr/bin/python3 - "$T/cmp.json" <<'PY' || fail "compare --json: $(head -c 2000 "$T/cmp.json")"
import json, sys
d = json.load(open(sys.argv[1]))
top = d["top_changes"][0]
assert top["kind"] == "kernel" and top["name"] == "gemm_slow_me", top
assert d["a"]["records"] == 12 and d["b"]["records"] == 12, (d["a"], d["b"])
assert abs(top["b"]["mean_ns"] / top["a"]["mean_ns"] - 2) < 0.05, top
# W1 of a 2x slowdown of a ~3 ms kernel is ~3 ms (quantized summaries: within 10%)
assert abs(top["w1_ns"] - (top["b"]["mean_ns"] - top["a"]["mean_ns"])) < 0.1 * top["w1_ns"], top
others = [r for r in d["rows"] if r["kind"] == "kernel" and r["name"] != "gemm_slow_me"]
assert others and all(r["w1_ns"] < 0.05 * top["w1_ns"] for r in others), others
phases = {r["name"]: r for r in d["rows"] if r["kind"] == "phase"}
assert set(phases) == {"forward", "backward", "optimizer"}, phases
assert all(r["impact_ns_per_step"] > 0 for r in phases.values()), phases
PY
# Two step ranges of one job: nothing changed, so no impact above 5% of a step.
ctl compare --json --job test --steps 10-12 --vs-steps 13-15 >"$T/same.json" || fail "compare ranges"
/usr/bin/python3 - "$T/same.json" <<'PY' || fail "compare of two ranges: $(head -c 2000 "$T/same.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["a"]["records"] == 6 and d["b"]["records"] == 6, (d["a"], d["b"])
step = [r for r in d["rows"] if r["kind"] == "step"][0]
assert all(abs(r["impact_ns_per_step"]) < 0.05 * step["a"]["mean_ns"] for r in d["rows"]), d["rows"]
PY
ctl compare --job test >"$T/bad.out" 2>&1; [[ $? == 2 ]] || fail "compare without a second side"
ctl compare --job ctl --steps 9-x --vs-steps 1-2 >"$T/bad.out" 2>&1; [[ $? == 2 ]] || fail "bad range"
grep -q "steps '9-x': expected a step range X-Y" "$T/bad.out" || fail "$(cat "$T/bad.out")"
ctl compare --job ctl --job nosuchjob >"$T/bad.out" 2>&1; [[ $? == 1 ]] || fail "unknown job: $(cat "$T/bad.out")"
echo PASS
