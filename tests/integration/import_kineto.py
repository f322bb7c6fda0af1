#!/usr/bin/env python3
"""Independent reading of a Kineto trace for tests/integration/import_kineto.sh
(json + gzip, not argus's reader).

  import_kineto.py expect TRACE [CUT]   -> JSON {step: {"dur": ns, "phases": {name: ns}}}
      CUT: only the steps whose ProfilerStep event ends before byte CUT of the JSON text
  import_kineto.py check EXPECTED STEPS_JSON RANK [any] -> exit 1 with a reason on a mismatch
      (any: a step may have no kernels, as when the trace was cut before them)
  import_kineto.py cut TRACE OUT AFTER_STEP -> writes the JSON text cut half-way between the
      end of ProfilerStep#AFTER_STEP's event and the next step event (or the end of the text);
      prints the cut length
"""
import gzip, json, re, sys


def text_of(path):
    with open(path, "rb") as f:
        raw = f.read()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def ns(us):
    return round(us * 1000)


def phase_of(name):
    if len(name) > 6 and name.startswith("## ") and name.endswith(" ##"):
        return name[3:-3]
    return name if name in ("forward", "backward", "optimizer") else None


def step_event_ends(text):
    """ProfilerStep#N -> offset just after its event object."""
    ends, dec = {}, json.JSONDecoder()
    for m in re.finditer(r'"name": *"ProfilerStep#(\d+)"', text):
        start = text.rfind("{", 0, m.start())
        _, end = dec.raw_decode(text, start)
        ends[int(m.group(1))] = end
    return ends


def events_before(text, cut):
    """The traceEvents entries that end before byte cut."""
    dec, out = json.JSONDecoder(), []
    at = text.index("[", text.index('"traceEvents"')) + 1
    while True:
        while text[at] in " \t\r\n,":
            at += 1
        if text[at] == "]":
            return out
        try:
            ev, end = dec.raw_decode(text[:cut], at)
        except ValueError:
            return out
        out.append(ev)
        at = end


def expect(path, cut=None):
    text = text_of(path)
    ev = json.loads(text)["traceEvents"] if cut is None else events_before(text, cut)
    steps = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op")
             and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    out = {}
    for s in steps:
        lo, hi = s["ts"], s["ts"] + s["dur"]
        # top-level phase annotations of the step, host ones (GPU ones only without host ones)
        for gpu in (False, True):
            cat = "gpu_user_annotation" if gpu else "user_annotation"
            anns = [e for e in ev if e.get("ph") == "X" and e.get("cat") == cat
                    and phase_of(e.get("name", "")) and lo <= e["ts"] < hi]
            top = [a for a in anns if not any(
                b is not a and b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
                and b["dur"] > a["dur"] for b in anns)]
            if top:
                break
        phases = {}
        for a in top:
            phases[phase_of(a["name"])] = phases.get(phase_of(a["name"]), 0) + ns(a["dur"])
        out[int(s["name"].split("#")[1])] = {"dur": ns(s["dur"]), "phases": phases}
    return out


def check(expected_path, steps_path, rank, need_kernels=True):
    exp = {int(k): v for k, v in json.load(open(expected_path)).items()}
    got = {s["step"]: s for s in json.load(open(steps_path))["steps"] if s["rank"] == rank}
    if sorted(got) != sorted(exp):
        sys.exit(f"rank {rank}: steps {sorted(got)} stored, expected {sorted(exp)}")
    for n, e in exp.items():
        g = got[n]
        if abs(int(g["duration_ns"]) - e["dur"]) > 1:
            sys.exit(f"rank {rank} step {n}: duration {g['duration_ns']} ns, trace says {e['dur']}")
        ph = {}
        for p in g.get("phases", []):
            ph[p["name"]] = int(p["duration_ns"])
        if sorted(ph) != sorted(e["phases"]):
            sys.exit(f"rank {rank} step {n}: phases {sorted(ph)}, trace has {sorted(e['phases'])}")
        for k, v in e["phases"].items():
            if abs(ph[k] - v) > 2:
                sys.exit(f"rank {rank} step {n}: phase {k} {ph[k]} ns, trace says {v}")
        if need_kernels and not g.get("kernels"):
            sys.exit(f"rank {rank} step {n}: no kernel groups")
    print(f"rank {rank}: {len(exp)} steps match the trace: " + ", ".join(
        f"{n}={exp[n]['dur'] / 1e6:.3f}ms [{' '.join(sorted(exp[n]['phases'])) or 'no phases'}]"
        for n in sorted(exp)))


def cut(path, out, after):
    text = text_of(path)
    ends = step_event_ends(text)
    end = ends[after]
    later = [e for e in ends.values() if e > end]
    stop = text.rfind("{", 0, min(later)) if later else len(text)
    at = end + (stop - end) // 2
    with open(out, "w") as f:
        f.write(text[:at])
    print(at)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "expect":
        print(json.dumps(expect(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None)))
    elif cmd == "check":
        check(sys.argv[2], sys.argv[3], int(sys.argv[4]), len(sys.argv) < 6)
    elif cmd == "cut":
        cut(sys.argv[2], sys.argv[3], int(sys.argv[4]))
