#!/usr/bin/env python3
"""Score the runs of tests/bench/detect.sh: one table, a row per scale x
scenario x delivery condition.

Input: a manifest, one JSON object per run: {"job", "scenario", "ranks",
"seed", "delivery", "sim", "log", "rep"}: the paths of argus-sim's output (the
first line is the run summary, the last the ground truth), its --send_log and
`argusctl --json stragglers` of the job.

Per row:
  precision, recall   of the paged (rank, cause) pairs against the truth (a
                      page: a rank-level suspect with cause COMPUTE, LINK,
                      HOST or SILENT above level L1). Scenarios without a
                      culprit (healthy, jit-stalls, data-skew,
                      everyone-slower) or whose culprit is the job's own
                      (imbalance: more work on one rank) want no page.
  pages               paged (rank, cause) pairs, summed over the runs
  false SILENT        SILENT pages of ranks whose records were all delivered
                      within the silence interval (from the send log: every
                      batch of the rank's stream acked within SILENCE s of the
                      previous one, and of the start), that are not culprits
  job findings        job-level causes reported, and rank-level ones that page
                      nobody above L1 (IMBALANCE)
  delay steps, s      from the fault's onset to the first correct page: steps
                      (to_step - onset) and seconds (report time - the time
                      the onset step was produced), mean over the runs that
                      paged
  +s base             the growth of the delay over the condition this one
                      adds to (same scenario and scale): lockstep for
                      realistic, realistic for the others (stall, outage,
                      spread, clock, overload are realistic plus a fault);
                      the issue wants it within the injected delay
  ok                  the issue's targets: precision and recall >= 0.95 for
                      a fault scenario, zero pages for healthy, data-skew,
                      imbalance and checkpoint, zero false SILENT pages; hang
                      and death also their delay (DELAY_TARGET_S: a hang named
                      within 30 s of the bound passing, i.e. 60 s after the
                      ranks stop; a death within 30 s of the kill)
Exit status 0; the table is the output.

  detect_score.py MANIFEST [SILENCE_S]
"""
import json
import sys

NONE = 4294967295
PAGES = {"CAUSE_COMPUTE", "CAUSE_LINK", "CAUSE_HOST", "CAUSE_SILENT", "CAUSE_HANG", "CAUSE_EXITED",
         "CAUSE_GPU_THROTTLED"}
# The liveness classes' time targets, from the onset (the ranks stop): a
# hang named within 30 s of its bound passing (HANG_BOUND_S, diag.hang_after
# at its default), a death within 30 s of the kill.
HANG_BOUND_S = 30.0
DELAY_TARGET_S = {"hang": HANG_BOUND_S + 30.0, "death": 30.0}
NO_PAGE = ("", "JOB_REGRESSION")


def load_lines(path):
    try:
        return [json.loads(line) for line in open(path) if line.strip()]
    except (OSError, ValueError):
        return []


def covered_agents(run, log, silence_ns):
    """Agents whose every batch was acked within the silence interval of the
    previous one (or of the start)."""
    acks = {}
    for b in log:
        acks.setdefault(b["agent"], []).append(b["acked_unix_ns"])
    ok = set()
    for agent, times in acks.items():
        times.sort()
        prev, good = run["start_unix_ns"], True
        for t in times:
            if t - prev >= silence_ns:
                good = False
                break
            prev = t
        if good:
            ok.add(agent)
    return ok, {b["agent"]: (b["first_rank"], b["nranks"]) for b in log}


def score_run(m, silence_ns):
    sim = load_lines(m["sim"])
    if len(sim) < 2:
        return None
    run, truth = sim[0], sim[-1]
    try:
        reports = json.load(open(m["rep"]))["reports"]
    except (OSError, ValueError, KeyError):
        reports = []
    cause = truth["cause"]
    want = set() if cause in NO_PAGE else {(c, cause) for c in truth["culprits"]}
    paged, job, first = set(), set(), None
    for r in sorted(reports, key=lambda r: int(r["created_unix_ns"])):
        for s in r["suspects"]:
            if s["rank"] == NONE or (s["cause"] == "CAUSE_IMBALANCE"
                                     and s["level"] != "LEVEL_L1_ITERATION"):
                job.add(s["cause"][6:])
            elif s["cause"] in PAGES and s["level"] != "LEVEL_L1_ITERATION":
                pair = (s["rank"], s["cause"][6:])
                paged.add(pair)
                if first is None and pair in want:
                    first = r
    ok_agents, layout = covered_agents(run, load_lines(m["log"]), silence_ns)
    covered = set()
    for agent in ok_agents:
        first_rank, nranks = layout[agent]
        covered.update(range(first_rank, first_rank + nranks))
    silent_truth = set(truth["culprits"]) if cause == "SILENT" else set()
    false_silent = {r for r, c in paged if c == "SILENT" and r in covered and r not in silent_truth}
    out = {"paged": len(paged), "want": len(want), "hit": len(paged & want), "job": sorted(job),
           "false_silent": len(false_silent), "complete": run["complete"]}
    if first is not None and run.get("rate", 0) > 0:
        onset_ns = run["start_unix_ns"] + truth["onset"] / run["rate"] * 1e9
        out["delay_steps"] = int(first["to_step"]) - truth["onset"]
        out["delay_s"] = (int(first["created_unix_ns"]) - onset_ns) / 1e9
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def row_of(scn, rs):
    paged = sum(r["paged"] for r in rs)
    want = sum(r["want"] for r in rs)
    hit = sum(r["hit"] for r in rs)
    prec = hit / paged if paged else (1.0 if not want else 0.0)
    rec = hit / want if want else 1.0
    fs = sum(r["false_silent"] for r in rs)
    fault = want > 0
    ok = fs == 0 and (prec >= 0.95 and rec >= 0.95 if fault else
                      paged == 0 or scn not in ("healthy", "data-skew", "imbalance",
                                                 "checkpoint"))
    delay = mean([r["delay_s"] for r in rs if "delay_s" in r])
    if scn in DELAY_TARGET_S:
        ok = ok and delay is not None and delay <= DELAY_TARGET_S[scn]
    return {"runs": len(rs), "prec": prec, "rec": rec, "pages": paged, "false_silent": fs,
            "job": ",".join(sorted({j for r in rs for j in r["job"]})) or "-",
            "delay_steps": mean([r["delay_steps"] for r in rs if "delay_steps" in r]),
            "delay_s": mean([r["delay_s"] for r in rs if "delay_s" in r]),
            "incomplete": sum(1 for r in rs if not r["complete"]), "ok": ok}


def fmt(v, f):
    return "-" if v is None else f % v


def main():
    silence_ns = float(sys.argv[2] if len(sys.argv) > 2 else 30) * 1e9
    groups, order = {}, []
    for m in load_lines(sys.argv[1]):
        r = score_run(m, silence_ns)
        if r is None:
            continue
        key = (m["ranks"], m["scenario"], m["delivery"])
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(r)
    rows = {k: row_of(k[1], groups[k]) for k in order}
    print("%6s %-25s %-10s %4s %5s %5s %5s %6s %-15s %6s %6s %7s %3s" % (
        "ranks", "scenario", "delivery", "runs", "prec", "recall", "pages", "fSILNT",
        "job findings", "d step", "d s", "+s base", "ok"))
    bad = 0
    for key in order:
        x = rows[key]
        base = "lockstep" if key[2] == "realistic" else "realistic"
        lock = rows.get((key[0], key[1], base)) if key[2] != "lockstep" else x
        grow = (x["delay_s"] - lock["delay_s"]
                if lock and x["delay_s"] is not None and lock["delay_s"] is not None else None)
        bad += not x["ok"]
        print("%6d %-25s %-10s %4d %5.2f %6.2f %5d %6d %-15s %6s %6s %7s %3s%s" % (
            key[0], key[1], key[2], x["runs"], x["prec"], x["rec"], x["pages"],
            x["false_silent"], x["job"][:15], fmt(x["delay_steps"], "%.0f"),
            fmt(x["delay_s"], "%.1f"), fmt(grow, "%+.1f"), "yes" if x["ok"] else "NO",
            " (%d sim runs incomplete)" % x["incomplete"] if x["incomplete"] else ""))
    print("%d of %d rows meet the targets" % (len(order) - bad, len(order)))


if __name__ == "__main__":
    main()
