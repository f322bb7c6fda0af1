#!/usr/bin/env bash
# Static check of the tree's shape (run by tests/run.sh in `make test`):
#   - no .c file under agent/ collector/ common/ tools/ tests/ bpf/ is over
#     700 lines;
#   - no include cycle between headers (two headers that include each other,
#     or a longer ring);
#   - no include cycle between folders: the folder of a file is its directory
#     (agent/, agent/<stage>/, collector/, collector/store/, collector/diag/,
#     common/, tools/<tool>/, ...); folder A depends on B when a file of A
#     includes a header of B. Generated headers (proto/, bpf/*.skel.h,
#     vmlinux.h) are not files of the tree and are ignored.
# Prints one offender per line with the reason and exits 1 if there is any.
# Files are the tracked and untracked-not-ignored ones (git ls-files), or
# every file when this is not a git checkout.
set -u
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 - "$@" <<'PY'
import os, re, subprocess, sys

sys.path.insert(0, "tests/lint")
from graph import cycles, ring  # noqa: E402

MAX_LINES = 700
LENGTH_ROOTS = ("agent/", "collector/", "common/", "tools/", "tests/", "bpf/")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def tree_files():
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.c", "*.h"],
                             capture_output=True, text=True, check=True).stdout
        return sorted(f for f in out.splitlines() if os.path.isfile(f))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for root, dirs, names in os.walk("."):
            dirs[:] = [d for d in dirs if d not in ("build", ".git")]
            found += [os.path.relpath(os.path.join(root, n)) for n in names
                      if n.endswith((".c", ".h"))]
        return sorted(found)


def generated(path):
    return (path.startswith("proto/") or path.endswith(".skel.h")
            or os.path.basename(path) == "vmlinux.h")


def includes(path, files):
    """The files of the tree that path includes (root-relative, or relative
    to path's directory), generated headers left out."""
    with open(path, errors="replace") as f:
        text = f.read()
    out = []
    for name in INCLUDE.findall(text):
        if generated(name):
            continue
        for cand in (name, os.path.normpath(os.path.join(os.path.dirname(path), name))):
            if cand in files:
                out.append(cand)
                break
    return out


def folder(path):
    return os.path.dirname(path) + "/"


def main():
    files = tree_files()
    fileset = set(files)
    problems = []

    for f in files:
        if f.endswith(".c") and f.startswith(LENGTH_ROOTS):
            with open(f, errors="replace") as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                problems.append(f"{f}: {n} lines, over {MAX_LINES} (split the file)")

    inc = {f: includes(f, fileset) for f in files}

    headers = {h: [i for i in inc[h] if i.endswith(".h")] for h in files if h.endswith(".h")}
    for comp in cycles(headers):
        r = ring(headers, comp)[:-1]  # the ring without its closing node
        if len(r) == 2:
            problems.append(f"{r[0]} <-> {r[1]}: the two headers include each other")
        else:
            problems.append(" -> ".join(r + [r[0]]) + ": headers include each other in a ring")

    folders, evidence = {}, {}
    for f in files:
        for i in inc[f]:
            a, b = folder(f), folder(i)
            if a == b:
                continue
            folders.setdefault(a, set()).add(b)
            evidence.setdefault((a, b), f"{f} includes {i}")
    for comp in cycles(folders):
        r = ring(folders, comp)[:-1]
        edges = [(r[k], r[(k + 1) % len(r)]) for k in range(len(r))]
        why = "; ".join(evidence[e] for e in edges)
        sep = " <-> " if len(r) == 2 else " -> "
        shown = sep.join(r) if len(r) == 2 else sep.join(r + [r[0]])
        problems.append(f"{shown}: include cycle between folders ({why})")

    for p in problems:
        print(p)
    if problems:
        print(f"layout: {len(problems)} problem(s)")
        return 1
    print(f"layout: {len(files)} files, no file over {MAX_LINES} lines, no include cycle")
    return 0


sys.exit(main())
PY
