#!/usr/bin/env bash
# Static check of the call graph between object files (run by tests/run.sh
# after the build): object A depends on object B when A uses a symbol (nm:
# U) that B defines (T, D, B, R, ...). A file is split along a seam when one
# side calls the other and never back (STYLE.md, Sizes), so no two objects
# of agent/, collector/, common/ or tools/ may depend on each other, directly
# (a two-way pair) or through a longer ring. Prints every such strongly
# connected component on one line, one ring through it with the symbols of
# each step, and exits 1 if there is any; exits 77 (skip) when there is no
# build to read ($ARGUS_BUILD/obj, default build/obj: run `make` first).
set -u
cd "$(dirname "$0")/../.."
obj=${ARGUS_BUILD:-build}/obj
if [[ ! -d $obj ]]; then
    echo "calls: skipped: no $obj (build first: make all)"
    exit 77
fi
if ! command -v nm >/dev/null; then
    echo "calls: skipped: nm not found (binutils)"
    exit 77
fi
exec /usr/bin/python3 - "$obj" <<'PY'
import collections, os, subprocess, sys

sys.path.insert(0, "tests/lint")
from graph import cycles, ring  # noqa: E402

ROOTS = ("agent", "collector", "common", "tools")
DEFINED = set("TDBRCVWGSI")  # global definitions (nm's upper-case types)


def objects(top):
    """The object files of the tree's sources: an object left in the build by
    a source since removed or moved would add symbols no binary links."""
    found = []
    for root in ROOTS:
        for d, _, names in os.walk(os.path.join(top, root)):
            found += [os.path.join(d, n) for n in names if n.endswith(".o")
                      and os.path.isfile(os.path.relpath(os.path.join(d, n[:-2] + ".c"), top))]
    return sorted(found)


def symbols(path):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", "-P", "--no-sort", path], capture_output=True, text=True,
                         check=True).stdout
    defs, uses = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[1] == "U":
            uses.add(parts[0])
        elif parts[1] in DEFINED:
            defs.add(parts[0])
    return defs, uses


def unit(name):
    """The program part an object links into: a tool's folder, the CUPTI
    library, or the top folder (agent, collector, common)."""
    parts = name.split("/")
    if parts[0] == "tools" or name.startswith("agent/cupti/"):
        return "/".join(parts[:2])
    return parts[0]


def owner_of(sym, user, definers):
    """The object that user's reference to sym binds to: among several
    definers, one of user's own program part, else common's."""
    if len(definers) == 1:
        return definers
    for pick in (unit(user), "common"):
        same = [d for d in definers if unit(d) == pick]
        if same:
            return same
    return definers


def main():
    top = sys.argv[1]
    paths = objects(top)
    name = {p: os.path.relpath(p, top) for p in paths}
    defs, uses, definers = {}, {}, collections.defaultdict(list)
    for p in paths:
        n = name[p]
        defs[n], uses[n] = symbols(p)
        for s in defs[n]:
            definers[s].append(n)
    graph = collections.defaultdict(set)
    via = collections.defaultdict(set)  # (a, b) -> symbols a uses from b
    for a, used in uses.items():
        for s in used:
            for b in owner_of(s, a, definers.get(s, [])):
                if b != a:
                    graph[a].add(b)
                    via[(a, b)].add(s)
    comps = cycles(graph)
    for comp in comps:
        path = ring(graph, comp)
        steps = " ".join("-> %s (%s)" % (b, ", ".join(sorted(via[(a, b)])))
                         for a, b in zip(path, path[1:]))
        print("calls: cycle of %d objects {%s}: %s %s" % (len(comp), " ".join(comp), path[0],
                                                         steps))
    if comps:
        print("calls: %d call cycle(s): split along a seam, so one side calls the other and "
              "never back" % len(comps))
        return 1
    print("calls: %d objects, no call cycle" % len(paths))
    return 0


sys.exit(main())
PY
