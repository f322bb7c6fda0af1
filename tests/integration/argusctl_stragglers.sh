#!/usr/bin/env bash
# argusctl stragglers as people read it, against the real collector fed by
# the simulator: a persisted compute straggler is listed as PAGES with
# persisted/window; JIT stalls (spikes of a step or a few) are findings that
# page nobody, left out by default (with a count) and listed by --all; --json
# is complete: every report, with pages flags that agree with the paging rule.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
for scn in compute-straggler jit-stalls; do
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$scn" --scenario "$scn" --ranks 64 \
        --steps 100 --rate 50 --steps_per_batch 2 --tp 2 --seed 7 >"$T/$scn.json" \
        || fail "$scn: sim failed: $(cat "$T/$scn.json")"
done
has_reports() { "$BIN/argusctl" --collector "127.0.0.1:$CPORT" --json stragglers --job "$1" |
    grep -q '"id"'; }
export -f has_reports
export BIN CPORT
wait_for "compute-straggler's report" 60 bash -c "has_reports compute-straggler"
wait_for "jit-stalls' findings" 60 bash -c "has_reports jit-stalls"

ctl stragglers --job compute-straggler >"$T/cs.txt" || fail "argusctl stragglers failed"
culprit=$(tail -1 "$T/compute-straggler.json" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')
grep -Eq "^  PAGES +rank $culprit .*COMPUTE .*persisted [0-9]+/40 steps" "$T/cs.txt" ||
    fail "compute straggler rank $culprit not listed as PAGES: $(cat "$T/cs.txt")"
grep -q '^  finding' "$T/cs.txt" && fail "default view shows findings: $(cat "$T/cs.txt")"

ctl stragglers --job jit-stalls >"$T/jit.txt" || fail "argusctl stragglers (jit) failed"
grep -q "^nothing pages for job jit-stalls" "$T/jit.txt" ||
    fail "jit-stalls default view: $(cat "$T/jit.txt")"
grep -Eq "^[0-9]+ reports? with findings that page nobody not shown" "$T/jit.txt" ||
    fail "no count of the findings left out: $(cat "$T/jit.txt")"
ctl stragglers --all --job jit-stalls >"$T/jit-all.txt" || fail "argusctl stragglers --all failed"
grep -Eq "^  finding rank [0-9]+ .*L1_ITERATION .*persisted [0-9]+/40 steps" "$T/jit-all.txt" ||
    fail "--all does not list the spike findings: $(cat "$T/jit-all.txt")"
grep -q '^  PAGES' "$T/jit-all.txt" && fail "a JIT stall pages: $(cat "$T/jit-all.txt")"

for job in compute-straggler jit-stalls; do
    ctl --json stragglers --job "$job" >"$T/$job.rep" || fail "argusctl --json failed"
    /usr/bin/python3 - "$T/$job.rep" "$T/$job.txt" <<'PY' || fail "$job: --json incomplete"
import json, sys
reports = json.load(open(sys.argv[1]))["reports"]
PAGES = {"CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_HOST", "CAUSE_SILENT"}
assert reports, "no reports"
for r in reports:
    assert "pages" in r, r
    for s in r["suspects"]:
        want = (s["rank"] != 4294967295 and s["cause"] in PAGES
                and s["level"] != "LEVEL_L1_ITERATION")
        assert s["pages"] == want, s
        assert s["window"] == 40 and 0 < s["persisted"] <= 40, s
    assert r["pages"] == any(s["pages"] for s in r["suspects"]), r
print("%d reports, %d page" % (len(reports), sum(r["pages"] for r in reports)))
PY
done
echo "argusctl stragglers ok"
