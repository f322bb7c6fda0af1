"""Checks the straggler reports of a real PyTorch job against what was done to
it (tests/bpf/torch_detect_case.sh). REPORTS is `argusctl --json stragglers`
(every report, findings too, with their pages flags).

  torch_detect_check.py paged REPORTS
      exit 0 when some report pages (polled while waiting), else 1.
  torch_detect_check.py healthy REPORTS
      nothing was done to the job: nothing pages, no SILENT suspect, no
      suspect that persisted (L2/L3); spikes of a step or a few (L1 findings:
      a shared machine's real stalls) are listed and counted, not failed.
  torch_detect_check.py throttle REPORTS --victim R --throttle-ns T
                        --deadline S [--log DIR --at-step N]
      rank R was put under a CPU quota at T (unix ns): the first report that
      pages was made within S seconds of T and names R, cause CAUSE_HOST
      (CPU-starved host: "cpu run queue"); nothing pages about any other rank
      (nor about R before T, nor SILENT). With --log, prints the job's own
      step time before and after the throttle (its per-step log).
"""
import argparse
import glob
import json
import os
import statistics
import sys

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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("paged", "healthy", "throttle"))
    p.add_argument("reports")
    p.add_argument("--victim", type=int)
    p.add_argument("--throttle-ns", type=int)
    p.add_argument("--deadline", type=int, default=60)
    p.add_argument("--log")
    p.add_argument("--at-step", type=int, default=0)
    a = p.parse_args()
    reports = json.load(open(a.reports)).get("reports", [])
    if a.mode == "paged":
        sys.exit(0 if any(r.get("pages") for r in reports) else 1)
    if a.mode == "healthy":
        bad = [r for r in reports if r.get("pages") or any(
            s.get("pages") or s.get("cause") == "CAUSE_SILENT"
            or s.get("level") != "LEVEL_L1_ITERATION" for s in r.get("suspects", []))]
        for r in reports:
            print(("FAIL: " if r in bad else "") + describe(r))
        print("%d reports about a healthy job: %d page, %d not spike findings, %d spike findings"
              % (len(reports), sum(bool(r.get("pages")) for r in reports), len(bad),
                 len(reports) - len(bad)))
        sys.exit(0 if not bad else 1)
    sys.exit(0 if check_throttle(reports, a) else 1)


if __name__ == "__main__":
    main()
