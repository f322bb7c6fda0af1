#!/usr/bin/env bash
# argusctl compare on kernels of more than one mode (issue 33), through
# import-kineto and a collector, against exact values computed here from the
# durations written (plain Python, nearest-rank quantiles and W1 of the
# samples): the report's four kernels a step (0.174, 0.175, 0.719, 0.751 ms;
# 1.719 and 1.751 on side B: p50 and p90 are ranks the agent's cluster
# knows, so they come out exact, never below the minimum; W1 within 5%), a kernel with one slow call in eight (p90 within
# 2%, W1 within 15%, every call counted), and four kernels whose names share
# their first 50 characters (each printed in full). --json's bounds hold the
# exact values.
source "$(dirname "$0")/lib.sh"

PREFIX=void_at_native_vectorized_elementwise_kernel_templ
/usr/bin/python3 - "$T" "$PREFIX" <<'PY' || fail "could not write the traces"
import gzip, json, sys
out, prefix = sys.argv[1], sys.argv[2]
FOUR = {False: [174, 175, 719, 751], True: [174, 175, 1719, 1751]}
def eight(step, rank, slow):
    d = [100 + (step * 7 + rank * 3 + i) % 5 for i in range(8)]
    d[3] = (700 + (step * 11 + rank) % 40) * (2 if slow else 1)
    return d
def trace(rank, slow):
    ev, t, corr = [], 1_000_000, 1
    for step in range(10, 18):
        start = t
        kernels = [("four_modes", d) for d in FOUR[slow]]
        kernels += [("one_slow_in_eight", d) for d in eight(step, rank, slow)]
        kernels += [(f"{prefix}_{v}", 50) for v in ("float", "half", "bfloat16", "double")]
        for name, dur in kernels:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "ts": t, "dur": 5, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "ts": t + 10, "dur": dur,
                       "args": {"stream": 7, "device": rank, "correlation": corr}})
            corr += 1
            t += dur + 20
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                   "ts": start, "dur": t - start + 50})
        t += 100
    return {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2},
            "traceEvents": ev}
exact = {}
for job, slow in (("base", False), ("slow", True)):
    for rank in (0, 1):
        with gzip.open(f"{out}/{job}-{rank}.json.gz", "wt") as f:
            json.dump(trace(rank, slow), f)
    exact[job] = {"four_modes": [d * 1000 for r in (0, 1) for s in range(10, 18) for d in FOUR[slow]],
                  "one_slow_in_eight": [d * 1000 for r in (0, 1) for s in range(10, 18)
                                        for d in eight(s, r, slow)]}
json.dump(exact, open(f"{out}/exact.json", "w"))
PY
start_collector "$T/store"
for job in base slow; do
    ctl import-kineto --job "$job" "$T/$job-0.json.gz" "$T/$job-1.json.gz" >"$T/$job.out" 2>&1 ||
        fail "import $job: $(cat "$T/$job.out")"
done
ctl compare --job base --job slow >"$T/cmp.txt" 2>&1 || fail "compare: $(cat "$T/cmp.txt")"
cat "$T/cmp.txt"
ctl compare --json --job base --job slow >"$T/cmp.json" || fail "compare --json"
/usr/bin/python3 - "$T/cmp.json" "$T/exact.json" <<'PY' || fail "compare --json (above)"
import json, math, sys
d = json.load(open(sys.argv[1]))
exact = json.load(open(sys.argv[2]))
rows = {r["name"]: r for r in d["rows"] if r["kind"] == "kernel"}
def quantile(v, p):
    v = sorted(v)
    return v[max(0, math.ceil(p * len(v) - 1e-9) - 1)]
def w1(a, b):
    a, b = sorted(a), sorted(b)
    xs = sorted(set(a + b))
    total, i, k = 0.0, 0, 0
    for x, nxt in zip(xs, xs[1:]):
        while i < len(a) and a[i] <= x: i += 1
        while k < len(b) and b[k] <= x: k += 1
        total += abs(i / len(a) - k / len(b)) * (nxt - x)
    return total
def check(name, tol_q, tol_w1):
    r = rows[name]
    for side, job in (("a", "base"), ("b", "slow")):
        v = exact[job][name]
        assert r[side]["count"] == len(v), (name, side, r[side]["count"], len(v))
        for p, key in ((0.5, "p50_ns"), (0.9, "p90_ns")):
            e, got = quantile(v, p), r[side][key]
            lo = r[side].get(key[:3] + "_lo_ns", 0)
            hi = r[side].get(key[:3] + "_hi_ns", math.inf)
            assert abs(got - e) <= tol_q * e, (name, side, key, got, e)
            assert min(v) * 0.996 <= got <= max(v) * 1.004, (name, side, key, got, min(v), max(v))
            assert lo <= e * 1.004 and e * 0.996 <= hi, (name, side, key, lo, e, hi)
    e = w1(exact["base"][name], exact["slow"][name])
    assert abs(r["w1_ns"] - e) <= tol_w1 * e, (name, r["w1_ns"], e)
    err = r.get("w1_err_ns", math.inf)
    assert abs(r["w1_ns"] - e) <= err * 1.000001, (name, r["w1_ns"], e, err)
errors = []
for args in (("four_modes", 0.004, 0.05), ("one_slow_in_eight", 0.02, 0.15)):
    try:
        check(*args)
    except AssertionError as e:
        errors.append(f"{args[0]}: {e}")
assert not errors, "\n".join(errors)
PY
for v in float half bfloat16 double; do
    grep -q "  ${PREFIX}_$v\$" "$T/cmp.txt" || fail "kernel ${PREFIX}_$v is not printed in full"
done
echo PASS
