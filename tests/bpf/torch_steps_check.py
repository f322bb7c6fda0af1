"""Compare the steps argus inferred for a real job with the job's own log
(tests/bpf/torch_ddp_steps_job.py), for tests/integration/agent_torch_steps*.sh.

usage: torch_steps_check.py LOGDIR STEPS_JSON RANKS [--late]

Each inferred step is matched with the job step (same rank) during which it
ended (5 ms before its end: see END_SLACK_NS): an inferred step closes with the last collective of a step (DDP's
last bucket, issued at the end of that step's backward), which is inside
the job step whose gradients it syncs. (Its start is the previous step's
last collective, so most of it can lie in the previous job step when a rank
waits long for the others after its backward: overlap does not say which
step it is.) Checks, per rank:
- the same real step has the same number on every rank: inferred number -
  job step is one offset for the whole job (every matched step, every rank);
- step count within 1% of the job's: all the job's steps (--late: those
  from the first matched one on, the agent came up while the job ran);
- mean step time (all inferred steps) within 3% of the job's own (mean of
  the job steps they matched).
Prints one line per rank and exits 1 when a check fails. When the realtime
clock was set during the run (realtime - monotonic of the job's log lines
moved by over 1 ms), it says so: steps around the set may match the wrong
job step.
"""
import collections
import json
import sys


def job_log(logdir, ranks):
    job = {}
    for r in range(ranks):
        steps = []
        for line in open("%s/rank.%d" % (logdir, r)):
            if line.startswith("JOBSTEP"):
                kv = dict(x.split("=") for x in line.split()[1:])
                steps.append((int(kv["step"]), int(kv["start_ns"]), int(kv["end_ns"])))
        job[r] = sorted(steps)
    return job


def clock_sets(logdir, ranks):
    """(rank, step, moved ns) where realtime - monotonic moved by over 1 ms."""
    sets = []
    for r in range(ranks):
        prev = None
        for line in open("%s/rank.%d" % (logdir, r)):
            kv = dict(x.split("=") for x in line.split()[1:]) if line.startswith("JOBSTEP") else {}
            if "mono_ns" not in kv:
                continue
            off = int(kv["end_ns"]) - int(kv["mono_ns"])
            if prev is not None and abs(off - prev) > 1000000:
                sets.append((r, int(kv["step"]), off - prev))
            prev = off
    return sets


END_SLACK_NS = 5000000


def containing(js, t):
    for step, a, b in js:
        if a <= t <= b:
            return step
    return None


def ranges(xs):
    """[1, 2, 3, 7] -> '1-3 7'."""
    out = []
    for x in xs:
        if out and out[-1][1] == x - 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return " ".join("%d-%d" % (a, b) if a != b else "%d" % a for a, b in out) or "none"


def main():
    logdir, steps_json, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    late = "--late" in sys.argv
    job = job_log(logdir, ranks)
    inferred = json.load(open(steps_json))["steps"]
    ok = True
    offsets = collections.Counter()
    per_rank = {}
    for r in range(ranks):
        mine = sorted((int(s["step"]), int(s["start_unix_ns"]), int(s["duration_ns"]))
                      for s in inferred if s["rank"] == r)
        if any(s["source"] != "STEP_SOURCE_INFERRED" for s in inferred if s["rank"] == r):
            print("rank %d: steps not inferred" % r)
            ok = False
        js = job[r]
        matched = []
        for n, start, dur in mine:
            # the end less END_SLACK: an inferred step ends at the return of
            # its last all-reduce, ~1 ms before the job's optimizer step and log
            # line end its step, so a ms of clock difference (a realtime set the
            # agent sees a tick later) would otherwise move it to the next
            # job step; misnumbering moves it by a whole step (80+ ms)
            k = containing(js, start + dur - END_SLACK_NS)
            if k is not None:
                matched.append((n, k, dur))
                offsets[n - k] += 1
        per_rank[r] = (mine, matched)
    for r, step, moved in clock_sets(logdir, ranks):
        print("rank %d: the realtime clock was set %+.1f ms before the end of job step %d"
              % (r, moved / 1e6, step))
    if not offsets:
        print("no inferred step matches a job step")
        return 1
    offset, _ = offsets.most_common(1)[0]
    for r in range(ranks):
        mine, matched = per_rank[r]
        js = job[r]
        wrong = [(n, k) for n, k, _ in matched if n - k != offset]
        good = [(n, k, d) for n, k, d in matched if n - k == offset]
        first = min(k for _, k, _ in good) if good else 0
        expect = len(js) - (first if late else 0)
        count_ok = abs(len(mine) - expect) <= max(1, expect // 100)
        real = {s: b - a for s, a, b in js}
        a = sum(d for _, _, d in mine) / max(1, len(mine))
        b = sum(real[k] for _, k, _ in matched) / max(1, len(matched))
        time_ok = b > 0 and abs(a - b) / b <= 0.03
        print("rank %d: %d inferred steps for %d job steps%s; %d numbered as job step + %d, "
              "%d otherwise %s; mean step %.2f ms, job's %.2f ms (%+.2f%%)" % (
                  r, len(mine), expect, " (from job step %d)" % first if late else "",
                  len(good), offset, len(wrong), wrong[:5], a / 1e6, b / 1e6,
                  100 * (a - b) / b if b else 0))
        if len(mine) != expect:
            seen = {k for _, k, _ in good}
            print("rank %d: job steps with no inferred step: %s" % (
                r, ranges(sorted(s for s, _, _ in js if s not in seen and (not late or s >= first)))))
        ok &= count_ok and not wrong and time_ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
