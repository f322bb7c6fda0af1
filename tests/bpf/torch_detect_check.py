"""Checks the straggler reports of a real PyTorch job against what was done to
it (tests/bpf/torch_detect_case.sh). REPORTS is `argusctl --json stragglers`
(every report, findings too, with their pages flags).

  torch_detect_check.py paged REPORTS [--since-ns T]
      exit 0 when some report made at or after T pages (polled while
      waiting), else 1.
  torch_detect_check.py healthy REPORTS --rank-steps N [--log DIR]
      nothing was done to the job: nothing pages, no SILENT suspect, no
      suspect that persisted (L2/L3), and at most N / 1000 findings (any
      suspect, spikes of a step or a few included) over its N rank-steps
      (the issue's target: 1 per 1,000 rank-steps on a healthy job). With
      --log (the job's own per-step log), a job-regression finding over
      steps whose own median step time was 1.15x or more the steps' before
      is true (the shared machine slowed the whole job) and not counted.
  torch_detect_check.py imbalance REPORTS --mode fixed|rotate [--victim R]
      one rank runs a bigger batch (fixed: rank R on every step; rotate: a
      rank after the other): nothing pages; no suspect says HOST, COMPUTE,
      LINK or SILENT above L1 (more work on a healthy host is the job's
      owner's: IMBALANCE, naming only R, for fixed; DATA_SKEW for rotate, or
      no finding at all).
  torch_detect_check.py throttle REPORTS --victim R --throttle-ns T
                        --deadline S [--log DIR --at-step N]
      rank R was put under a CPU quota at T (unix ns): the first report that
      pages was made within S seconds of T and names R, cause CAUSE_HOST
      (CPU-starved host: "cpu run queue"); nothing pages about any other rank
      (nor about R before T, nor SILENT). With --log, prints the job's own
      step time before and after the throttle (its per-step log).
  torch_detect_check.py fault REPORTS --victim R --cause CAUSE --since-ns T
                        --deadline S [--from-ns F] [--until-ns U]
      a fault was made on rank R at T (unix ns: stopped, blocked, spinning,
      killed, exited with an error): among the reports made in [F, U], the
      first that pages after T was made within S seconds of it and names only
      R, with CAUSE (CAUSE_HANG or CAUSE_EXITED); every other page of the
      window is R with CAUSE after T too (so nothing pages about another rank,
      nor before the fault). A test of several faults in a row checks each in
      its own window.
  torch_detect_check.py quiet REPORTS [--since-ns T]
      nothing made at or after T pages (a checkpoint, workload imbalance):
      the reports are listed.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

# argus's inferred steps of these jobs are the job's own + 2
# (tests/bpf/torch_steps_check.py prints the offset it finds)
JOB_STEP_OFFSET = 2


def num(v):
    return int(v) if v not in (None, "") else 0

NO_RANK = 4294967295


def describe(r):
    lines = ["report %s %s steps %s-%s: %s" % (
        r["id"], "PAGES" if r.get("pages") else "finding", r.get("from_step", 0),
        r.get("to_step", 0), r.get("summary", ""))]
    for s in r.get("suspects", []):
        lines.append("    %s rank %s %s %s %s persisted %s/%s: %s" % (
            "PAGES" if s.get("pages") else "finding",
            "job" if s.get("rank", 0) == NO_RANK else s.get("rank", 0), s.get("level", "-"),
            s.get("cause", "-"), s.get("where", "-"), s.get("persisted", 0),
            s.get("window", 0), s.get("evidence", "")))
    return "\n".join(lines)


def job_step_ms(logdir, at_step):
    """Median step time (ms) of each rank before and after step at_step."""
    out = []
    for f in sorted(glob.glob(os.path.join(logdir, "rank.*"))):
        rows = []
        for line in open(f):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            rows.append((int(kv["step"]), (int(kv["end_ns"]) - int(kv["start_ns"])) / 1e6))
        before = [d for s, d in rows if 10 <= s < at_step]
        after = [d for s, d in rows if s >= at_step + 5]
        if before and after:
            out.append("%s %.0f -> %.0f ms" % (os.path.basename(f), statistics.median(before),
                                                statistics.median(after)))
    return "; ".join(out)


def check_throttle(reports, a):
    t0 = a.throttle_ns
    paging = sorted((r for r in reports if r.get("pages")), key=lambda r: int(r["created_unix_ns"]))
    if a.log:
        print("job's own median step time: " + job_step_ms(a.log, a.at_step))
    ok = True
    if not paging:
        print("FAIL: no report pages")
        return False
    first = paging[0]
    after_s = (int(first["created_unix_ns"]) - t0) / 1e9
    named = [s for s in first["suspects"] if s.get("pages")]
    print("first page %.1f s after the throttle:\n%s" % (after_s, describe(first)))
    if after_s < 0 or after_s > a.deadline:
        print("FAIL: the first page came %.1f s after the throttle (want 0-%d s)"
              % (after_s, a.deadline))
        ok = False
    if [s["rank"] for s in named] != [a.victim]:
        print("FAIL: the first page names ranks %s, want only %d" % (
            [s["rank"] for s in named], a.victim))
        ok = False
    for s in named:
        if s["rank"] == a.victim and s["cause"] != "CAUSE_HOST":
            print("FAIL: rank %d paged with cause %s, want CAUSE_HOST (CPU-starved host)"
                  % (a.victim, s["cause"]))
            ok = False
    for r in paging[1:]:
        for s in r["suspects"]:
            if s.get("pages") and (s["rank"] != a.victim or s["cause"] == "CAUSE_SILENT"):
                print("FAIL: another page:\n%s" % describe(r))
                ok = False
    later = [r for r in paging if r["suspects"] and all(
        s["rank"] == a.victim and s["cause"] == "CAUSE_HOST" for s in r["suspects"] if s["pages"])]
    print("%d reports, %d page, %d of them rank %d CAUSE_HOST; %d findings" % (
        len(reports), len(paging), len(later), a.victim, len(reports) - len(paging)))
    return ok


def check_fault(reports, a):
    """The pages created in [from_ns, until_ns]: the first at or after the
    fault (since_ns) within the deadline names only the victim with the
    cause, and every paging suspect of the window is the victim with that
    cause, made at or after the fault."""
    t0, lo, hi = a.since_ns, a.from_ns, a.until_ns or 2**63
    paging = sorted((r for r in reports if r.get("pages") and lo <= int(r["created_unix_ns"]) <= hi),
                    key=lambda r: int(r["created_unix_ns"]))
    after = [r for r in paging if int(r["created_unix_ns"]) >= t0]
    if not after:
        print("FAIL: no report pages after the fault")
        for r in reports:
            print(describe(r))
        return False
    first = after[0]
    after_s = (int(first["created_unix_ns"]) - t0) / 1e9
    print("first page %.1f s after the fault:\n%s" % (after_s, describe(first)))
    ok = True
    if after_s > a.deadline:
        print("FAIL: the first page came %.1f s after the fault (want <= %d s)" % (after_s, a.deadline))
        ok = False
    named = [s["rank"] for s in first["suspects"] if s.get("pages")]
    if named != [a.victim]:
        print("FAIL: the first page names ranks %s, want only %d" % (named, a.victim))
        ok = False
    for r in paging:
        for s in r["suspects"]:
            if s.get("pages") and (s["rank"] != a.victim or s.get("cause") != a.cause or
                                   int(r["created_unix_ns"]) < t0):
                print("FAIL: a page other than rank %d %s after the fault:\n%s"
                      % (a.victim, a.cause, describe(r)))
                ok = False
    print("%d reports, %d page in the window; %d findings in all"
          % (len(reports), len(paging), sum(not r.get("pages") for r in reports)))
    return ok


def count_causes(reports):
    out = {}
    for r in reports:
        for s in r.get("suspects", []):
            key = "%s/%s" % (s.get("cause", "-")[6:], s.get("level", "-")[6:])
            out[key] = out.get(key, 0) + 1
    return out


def job_slowdown(logdir, lo, hi):
    """The job's own median step time over its steps lo..hi against the
    steps before lo (from step 10), max over ranks; 0 when unknown."""
    worst = 0.0
    for f in sorted(glob.glob(os.path.join(logdir, "rank.*"))):
        rows = []
        for line in open(f):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            rows.append((int(kv["step"]), int(kv["end_ns"]) - int(kv["start_ns"])))
        before = [d for s, d in rows if 10 <= s < lo]
        during = [d for s, d in rows if lo <= s <= hi]
        if len(before) >= 10 and during:
            worst = max(worst, statistics.median(during) / statistics.median(before))
    return worst


def true_regression(r, s, a):
    """A JOB_REGRESSION finding the job's own log bears out: the machine (a
    shared CI runner) really made the whole job slower from the change point
    the finding names ("since step N") to the report's last step, against
    the steps before it (argus numbers steps as the job's + JOB_STEP_OFFSET;
    the report's window holds mostly steps before the change)."""
    if s.get("cause") != "CAUSE_JOB_REGRESSION" or not a.log:
        return False
    since = re.search(r"since step (\d+)", s.get("evidence", ""))
    lo = int(since.group(1) if since else num(r.get("from_step"))) - JOB_STEP_OFFSET
    hi = num(r.get("to_step")) - JOB_STEP_OFFSET
    moved = job_slowdown(a.log, lo, hi)
    print("job regression over job steps %d-%d: the job's own step time %.2fx" % (lo, hi, moved))
    return moved >= 1.15


def check_healthy(reports, a):
    bad = [r for r in reports if r.get("pages") or any(
        s.get("pages") or s.get("cause") == "CAUSE_SILENT"
        or s.get("level") != "LEVEL_L1_ITERATION" for s in r.get("suspects", []))]
    for r in reports:
        print(("FAIL: " if r in bad else "") + describe(r))
    findings = sum(1 for r in reports for s in r.get("suspects", [])
                   if not true_regression(r, s, a))
    allowed = a.rank_steps // 1000
    print("%d reports about a healthy job: %d page, %d not spike findings; %d findings over %d "
          "rank-steps (%.2f per 1,000, at most %d allowed) %s" % (
              len(reports), sum(bool(r.get("pages")) for r in reports), len(bad), findings,
              a.rank_steps, 1000.0 * findings / max(a.rank_steps, 1), allowed,
              count_causes(reports)))
    ok = not bad
    if findings > allowed:
        print("FAIL: %d findings over %d rank-steps, want at most %d" % (
            findings, a.rank_steps, allowed))
        ok = False
    return ok


def check_imbalance(reports, a):
    ok = True
    for r in reports:
        wrong = [s for s in r.get("suspects", []) if s.get("pages") or (
            s.get("level") != "LEVEL_L1_ITERATION" and s.get("cause") in (
                "CAUSE_HOST", "CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_SILENT"))
            or (s.get("cause") == "CAUSE_IMBALANCE" and (
                a.mode == "rotate" or s.get("rank") != a.victim))]
        print(("FAIL: " if wrong or r.get("pages") else "") + describe(r))
        ok = ok and not wrong and not r.get("pages")
    print("%d reports about a job with %s imbalance: %d page; %s" % (
        len(reports), a.mode, sum(bool(r.get("pages")) for r in reports),
        count_causes(reports)))
    return ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=("paged", "healthy", "throttle", "imbalance", "fault",
                                     "quiet"))
    p.add_argument("reports")
    p.add_argument("--victim", type=int)
    p.add_argument("--throttle-ns", type=int)
    p.add_argument("--deadline", type=int, default=60)
    p.add_argument("--log")
    p.add_argument("--at-step", type=int, default=0)
    p.add_argument("--cause")
    p.add_argument("--since-ns", type=int, default=0)
    p.add_argument("--from-ns", type=int, default=0)
    p.add_argument("--until-ns", type=int, default=0)
    p.add_argument("--rank-steps", type=int, default=0)
    p.add_argument("--mode", choices=("fixed", "rotate"), default="fixed")
    a = p.parse_args()
    reports = json.load(open(a.reports)).get("reports", [])
    if a.check == "paged":
        sys.exit(0 if any(r.get("pages") and int(r["created_unix_ns"]) >= a.since_ns
                          for r in reports) else 1)
    if a.check == "healthy":
        sys.exit(0 if check_healthy(reports, a) else 1)
    if a.check == "imbalance":
        sys.exit(0 if check_imbalance(reports, a) else 1)
    if a.check == "quiet":
        bad = [r for r in reports if r.get("pages") and int(r["created_unix_ns"]) >= a.since_ns]
        for r in reports:
            print(("FAIL: " if r in bad else "") + describe(r))
        sys.exit(1 if bad else 0)
    if a.check == "fault":
        sys.exit(0 if check_fault(reports, a) else 1)
    sys.exit(0 if check_throttle(reports, a) else 1)


if __name__ == "__main__":
    main()
