#!/usr/bin/python3
"""Judges the collector's straggler reports of one delivery-test case.

    delivery_check.py CASE REPORTS.json --expect none|straggler|quiet-node [options]

REPORTS.json is `argusctl --json stragglers --job J`. A page is a suspect
with a paging cause (COMPUTE, LINK, HOST, SILENT) above the iteration level,
as in diagnosis_scenarios.sh; a finding is a report.
  none        zero reports (healthy job, short stall, start spread);
  straggler   --truth (argus-sim --record's line): every culprit paged with
              the truth's cause, and nobody else paged;
  quiet-node  --node N --ranks LO-HI: at most one report, every suspect in
              it about that node (its name or one of its ranks), and no
              suspect for one of its ranks in a report created after
              --after (UNIX ns: when the node resumed or its link came back).
              Besides, argus's own blindness (CAUSE_DIAG_BLIND, about the
              job: the node's records came back too late to diagnose) may be
              said, in reports of its own.
--metrics FILE (the collector's /metrics) is printed in part with a failure.
Exits 0 when the expectation holds, else 1 after saying why. Stdlib only.
"""
import argparse
import json
import sys

NO_RANK = 4294967295
PAGE_CAUSES = {"CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_HOST", "CAUSE_SILENT"}


def num(v):
    return int(v) if v not in (None, "") else 0


def describe(s):
    rank = "node" if num(s.get("rank")) == NO_RANK else "rank %d" % num(s.get("rank"))
    return "%s (%s) %s %s %s" % (rank, s.get("node", ""), s.get("cause", "?"),
                                 s.get("level", "?"), s.get("evidence", "")[:100])


def is_page(s):
    return s.get("cause") in PAGE_CAUSES and s.get("level") != "LEVEL_L1_ITERATION"


def check_none(reports, a):
    if reports:
        return ["expected no report, got %d" % len(reports)]
    return []


def check_straggler(reports, a):
    truth = json.loads(open(a.truth).read().strip().splitlines()[-1])
    cause = "CAUSE_" + truth["cause"]
    want = {(int(r), cause) for r in truth["culprits"]}
    paged = set()
    for r in reports:
        for s in r.get("suspects", []):
            if is_page(s):
                paged.add((num(s.get("rank")), s.get("cause")))
    why = []
    if want - paged:
        why.append("not paged: %s" % sorted(want - paged))
    if paged - want:
        extra = sorted(paged - want)
        why.append("paged who should not be: %d, e.g. %s" % (len(extra), extra[:8]))
    return why


def is_blind(r):
    return all(s.get("cause") == "CAUSE_DIAG_BLIND" for s in r.get("suspects", []))


def check_quiet_node(reports, a):
    lo, _, hi = a.ranks.partition("-")
    ranks = set(range(int(lo), int(hi or lo) + 1))
    why = []
    reports = [r for r in reports if not is_blind(r)]
    if len(reports) > 1:
        why.append("expected at most one finding about %s, got %d reports" % (a.node, len(reports)))
    for r in reports:
        created = num(r.get("created_unix_ns"))
        others, late = [], []
        for s in r.get("suspects", []):
            rank = num(s.get("rank"))
            if not (s.get("node") == a.node or rank in ranks):
                others.append(s)
            elif rank in ranks and a.after and created > a.after:
                late.append(s)
        if others:
            why.append("report %s is about others: %d suspects, e.g. %s" % (
                r.get("id"), len(others), describe(others[0])))
        if late:
            why.append("report %s, %.1f s after the node came back, names %d of its ranks, e.g. %s"
                       % (r.get("id"), (created - a.after) / 1e9, len(late), describe(late[0])))
    return why


def metrics_excerpt(path):
    keep = ("argus_diag", "argus_ingest_rank_steps", "argus_ingest_streams", "argus_ingest_rejects")
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return []
    return [l for l in lines if l.startswith(keep) and not l.endswith(" 0")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("reports")
    ap.add_argument("--expect", required=True, choices=("none", "straggler", "quiet-node"))
    ap.add_argument("--truth")
    ap.add_argument("--node", default="")
    ap.add_argument("--ranks", default="")
    ap.add_argument("--after", type=int, default=0)
    ap.add_argument("--metrics")
    a = ap.parse_args()
    if a.expect == "straggler" and not a.truth:
        ap.error("--expect straggler needs --truth")
    if a.expect == "quiet-node" and not (a.node and a.ranks):
        ap.error("--expect quiet-node needs --node and --ranks")
    try:
        reports = json.load(open(a.reports)).get("reports", [])
    except (OSError, ValueError) as e:
        print("%s: cannot read the reports %s: %s" % (a.case, a.reports, e))
        return 1
    why = {"none": check_none, "straggler": check_straggler,
           "quiet-node": check_quiet_node}[a.expect](reports, a)
    pages = sum(1 for r in reports for s in r.get("suspects", []) if is_page(s))
    print("%-14s %d reports, %d pages: %s" % (a.case, len(reports), pages,
                                              "ok" if not why else "FAILED"))
    if not why:
        return 0
    for w in why[:20]:
        print("  " + w)
    for r in reports[:8]:
        print("  report %s steps %s-%s: %s" % (r.get("id"), r.get("from_step"), r.get("to_step"),
                                               r.get("summary", "")))
        for s in r.get("suspects", [])[:4]:
            print("    " + describe(s))
    if len(reports) > 8:
        print("  ... and %d more reports" % (len(reports) - 8))
    if a.metrics:
        for l in metrics_excerpt(a.metrics):
            print("  metric " + l)
    return 1


if __name__ == "__main__":
    sys.exit(main())
