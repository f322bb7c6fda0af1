#!/usr/bin/env bash
# argusctl import-kineto on the real traces of ../shared/data/kineto: every
# ProfilerStep#N of each trace is stored with its own duration, its phases
# from the trace's top-level "## NAME ##" / forward / backward / optimizer
# annotations and summarized kernels, under the trace's rank and world size
# (both computed here independently with python's gzip + json). Then a trace
# cut mid-JSON: an error naming the byte offset and the partial step dropped,
# nothing stored as if whole; and a cut gzip stream: an error naming the
# truncation and the offset.
source "$(dirname "$0")/lib.sh"

DATA=${ARGUS_KINETO_DIR:-$REPO/../shared/data/kineto}
R0=$DATA/trace_filter__sampled_rank-0.json.gz
R1=$DATA/trace_filter__sampled_rank-1.json.gz
NCCL=$DATA/nccl_parser_config__nccl_data.json.gz
[[ -r $R0 && -r $R1 && -r $NCCL ]] || skip "no Kineto traces in $DATA"
PY="/usr/bin/python3 $REPO/tests/integration/import_kineto.py"

start_collector "$T/store"
ctl import-kineto --job real "$R0" "$R1" >"$T/real.out" 2>&1 || fail "import: $(cat "$T/real.out")"
ctl import-kineto --job nccl "$NCCL" >"$T/nccl.out" 2>&1 || fail "import: $(cat "$T/nccl.out")"
cat "$T/real.out" "$T/nccl.out"
grep -q "rank 0/128, 2 steps (551-552)" "$T/real.out" || fail "rank-0: $(cat "$T/real.out")"
grep -q "rank 1/128, 2 steps (551-552)" "$T/real.out" || fail "rank-1: $(cat "$T/real.out")"
grep -q "rank 0/2, 3 steps (4-6), 2700 kernels, phases: forward backward optimizer" \
    "$T/nccl.out" || fail "nccl: $(cat "$T/nccl.out")"

ctl --json steps --job real >"$T/real.json" || fail "steps --job real"
ctl --json steps --job nccl >"$T/nccl.json" || fail "steps --job nccl"
$PY expect "$R0" >"$T/r0.exp" && $PY expect "$R1" >"$T/r1.exp" && $PY expect "$NCCL" >"$T/n.exp" ||
    fail "python could not read the traces"
$PY check "$T/r0.exp" "$T/real.json" 0 || fail "rank-0 trace and stored steps differ"
$PY check "$T/r1.exp" "$T/real.json" 1 || fail "rank-1 trace and stored steps differ"
$PY check "$T/n.exp" "$T/nccl.json" 0 || fail "nccl trace and stored steps differ"
ctl --json jobs | /usr/bin/python3 -c '
import json, sys
jobs = {j["job"]: j for j in json.load(sys.stdin)["jobs"]}
assert jobs["real"]["world_size"] == 128 and jobs["real"]["ranks_seen"] == 2, jobs["real"]
assert jobs["nccl"]["world_size"] == 2, jobs["nccl"]' || fail "world size / ranks not from distributedInfo"

# The JSON cut half-way between ProfilerStep#551's event and #552's: step 551,
# the last read (its kernels come later in the file), is partial and dropped,
# with a warning that says so; nothing is imported as if whole.
at=$($PY cut "$R0" "$T/cut.json" 551) || fail "could not cut the trace"
ctl import-kineto --job cut "$T/cut.json" >"$T/cut.out" 2>&1; rc=$?
[[ $rc == 4 ]] || fail "a truncated trace: exit $rc, want 4 (partly imported): $(cat "$T/cut.out")"
cat "$T/cut.out"
grep -q "unexpected end of input at byte $at" "$T/cut.out" || fail "no offset $at: $(cat "$T/cut.out")"
grep -q "dropped the partial step 551 (0 kernels, [0-9]* annotations)" "$T/cut.out" ||
    fail "no word of the partial step: $(cat "$T/cut.out")"
grep -q "importing the 0 whole steps read before byte $at" "$T/cut.out" || fail "$(cat "$T/cut.out")"
ctl --json steps --job cut >"$T/cut-steps.json" || fail "steps --job cut"
/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])).get("steps", []); sys.exit(1 if s else 0)' \
    "$T/cut-steps.json" || fail "a partial step was imported: $(cat "$T/cut-steps.json")"

# The gzip stream cut: the error says so and names the offset.
head -c 60000 "$R0" >"$T/cut.json.gz"
ctl import-kineto --job cutgz "$T/cut.json.gz" >"$T/cutgz.out" 2>&1; rc=$?
[[ $rc == 4 ]] || fail "a cut gzip: exit $rc, want 4: $(cat "$T/cutgz.out")"
cat "$T/cutgz.out"
grep -Eq "gzip stream is truncated: unexpected end of input at byte [0-9]+" "$T/cutgz.out" ||
    fail "cut gzip: $(cat "$T/cutgz.out")"

# Bad input: a missing file, no --job, no rank anywhere.
ctl import-kineto --job x "$T/nope.json" >"$T/nope.out" 2>&1 && fail "a missing file imported"
grep -q "nope.json: cannot open" "$T/nope.out" || fail "missing file: $(cat "$T/nope.out")"
ctl import-kineto "$R0" >"$T/nojob.out" 2>&1; [[ $? == 2 ]] || fail "no --job: not a usage error"
echo '{"traceEvents": [{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":1,"dur":5}]}' \
    >"$T/norank.json"
ctl import-kineto --job nr "$T/norank.json" >"$T/norank.out" 2>&1 && fail "no rank accepted"
grep -q "no distributedInfo.rank; pass --rank" "$T/norank.out" || fail "$(cat "$T/norank.out")"
ctl import-kineto --job nr --rank 5 "$T/norank.json" >"$T/norank.out" 2>&1 ||
    fail "--rank: $(cat "$T/norank.out")"
grep -q "rank 5/6, 1 step (1-1), 0 kernels, no phase annotations in this trace" "$T/norank.out" ||
    fail "--rank: $(cat "$T/norank.out")"
echo "PASS"
