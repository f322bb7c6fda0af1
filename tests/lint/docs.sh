#!/usr/bin/env bash
# Keeps the documentation true (run by tests/run.sh in `make test`):
#   - README.md is at most 300 lines (the details live in docs/);
#   - every repository path written in README.md and docs/*.md
#     (`collector/store/store.h`, tests/e2e/demo.sh, deploy/k8s/ ...) exists
#     in the tree, and every relative Markdown link points at a file; paths
#     under build/, globs and placeholders (*, <name>, NAME) are not checked;
#   - every config key written in backquotes (`diag.window`, `spool.cap = 4GiB`)
#     exists in the --print-config of the daemon whose section it names
#     (a section both daemons have: in either), and every default in a table
#     of docs/operations.md (`| \`key\` | default |` under a line "From
#     \`DAEMON --print-config\`") is that daemon's;
#   - every `argusctl COMMAND` in docs/cli.md is a command of argusctl --help
#     (or one with its own --help, like import-kineto), and every --flag
#     written there is one of argusctl's;
#   - argusctl --help names every cause of common/causes.c (its --cause list
#     is written by hand: a new cause must be added there).
# Needs the built daemons (${ARGUS_BUILD:-build}/bin): without them it prints
# why and exits 77 (skip). Prints one offender per line and exits 1 if any.
set -u
cd "$(dirname "$0")/../.."
BIN=${ARGUS_BUILD:-build}/bin
for b in argus-agent argus-collector argusctl; do
    [[ -x $BIN/$b ]] || { echo "skip: $BIN/$b is not built (make all)"; exit 77; }
done
exec /usr/bin/python3 - "$BIN" <<'PY'
import glob, os, re, subprocess, sys

BIN = sys.argv[1]
MAX_README_LINES = 300
ROOTS = ("agent", "collector", "common", "tools", "tests", "deploy", "bpf", "proto", "docs")
PATH_RE = re.compile(r"(?<![A-Za-z0-9_./~$-])((?:%s)/[A-Za-z0-9_./{},<>*#-]*)" % "|".join(ROOTS))
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
TICKS_RE = re.compile(r"`([^`\n]+)`")
FILE_EXT = re.compile(r"\.(c|h|sh|md|py|conf|json|ya?ml|service|so|svg|proto|crt|key|txt|gz|o)$")

docs = ["README.md"] + sorted(glob.glob("docs/*.md"))
bad = []


def expand(p):
    """One {a,b} group expanded: common/causes.{h,c} -> both."""
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    return [p[:m.start()] + alt + p[m.end():] for alt in m.group(1).split(",")]


def check_path(doc, n, p):
    p = p.rstrip(".,:;")
    if any(c in p for c in "*<>#") or "NAME" in p or "..." in p:
        return
    for q in expand(p):
        if not os.path.exists(q):
            bad.append(f"{doc}:{n}: {q}: no such file or directory in the tree")


def config_keys(daemon):
    out = subprocess.run([f"{BIN}/{daemon}", "--print-config"], capture_output=True,
                         text=True, check=True).stdout
    keys, section = {}, ""
    for line in out.splitlines():
        m = re.match(r"^\[([a-z_]+)\]$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^([a-z_0-9]+) = (.*)$", line)
        if m:
            value = m.group(2)
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            keys[f"{section}.{m.group(1)}"] = value
    return keys


keys = {d: config_keys(d) for d in ("argus-agent", "argus-collector")}
sections = {d: {k.split(".")[0] for k in ks} for d, ks in keys.items()}
all_sections = sections["argus-agent"] | sections["argus-collector"]
KEY_RE = re.compile(r"(?<![A-Za-z0-9_./$-])(%s)\.([a-z_0-9]+)\b(?![./(-])" %
                    "|".join(sorted(all_sections)))


def check_keys(doc, n, line):
    for span in TICKS_RE.findall(line):
        for sect, key in KEY_RE.findall(span):
            full = f"{sect}.{key}"
            if FILE_EXT.search(full):
                continue
            owners = [d for d in keys if sect in sections[d]]
            if not any(full in keys[d] for d in owners):
                bad.append(f"{doc}:{n}: config key {full} is not in the --print-config of "
                           + " or ".join(owners))


DEFAULT_ROW = re.compile(r"^\| `([a-z_0-9]+\.[a-z_0-9]+)` \| ([^|]*) \|")
FROM_RE = re.compile(r"^From `(argus-agent|argus-collector) --print-config`")


def check_defaults(doc, lines):
    """The tables of operations.md: each row `| `key` | default | ... |` under a
    "From `DAEMON --print-config`" line has that daemon's default ((empty): "")."""
    daemon = None
    for n, line in enumerate(lines, 1):
        m = FROM_RE.match(line)
        if m:
            daemon = m.group(1)
            continue
        m = DEFAULT_ROW.match(line)
        if not m or not daemon or m.group(1) not in keys[daemon]:
            continue
        doc_value = m.group(2).strip()
        doc_value = "" if doc_value == "(empty)" else doc_value
        if doc_value != keys[daemon][m.group(1)]:
            bad.append(f"{doc}:{n}: {m.group(1)} defaults to '{keys[daemon][m.group(1)]}' in "
                       f"{daemon} --print-config, not '{doc_value}'")


for doc in docs:
    with open(doc) as f:
        lines = f.read().splitlines()
    if doc == "README.md" and len(lines) > MAX_README_LINES:
        bad.append(f"README.md: {len(lines)} lines, more than {MAX_README_LINES}: move details to docs/")
    for n, line in enumerate(lines, 1):
        for p in PATH_RE.findall(line):
            check_path(doc, n, p)
        for link in LINK_RE.findall(line):
            if re.match(r"^[a-z]+:", link) or link.startswith("#"):
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(doc), link.split("#")[0]))
            if not os.path.exists(target):
                bad.append(f"{doc}:{n}: link {link}: {target} does not exist")
        check_keys(doc, n, line)
    check_defaults(doc, lines)


def ctl(*args):
    r = subprocess.run([f"{BIN}/argusctl", *args], capture_output=True, text=True)
    return r.returncode, r.stdout


_, help_text = ctl("--help")
commands = set()
in_commands = False
for line in help_text.splitlines():
    if line.startswith("Commands:"):
        in_commands = True
    elif in_commands and line.startswith("  "):
        commands.add(line.split()[0])
    elif in_commands:
        in_commands = False
flags = set(re.findall(r"(?m)^\s+(--[a-z][a-z0-9_.-]*)", help_text))
cli = "docs/cli.md"
if os.path.exists(cli):
    text = open(cli).read()
    for cmd in sorted(set(re.findall(r"\bargusctl ([a-z][a-z-]*)", text))):
        if cmd in commands:
            continue
        rc, out = ctl(cmd, "--help")
        if rc == 0 and out.startswith(f"argusctl {cmd}:"):
            commands.add(cmd)
            flags |= set(re.findall(r"(?m)^\s+(--[a-z][a-z0-9_.-]*)", out))
        else:
            bad.append(f"{cli}: argusctl {cmd}: not a command of argusctl --help")
    for flag in sorted(set(re.findall(r"(?<![A-Za-z0-9_-])(--[a-z][a-z0-9_.-]*[a-z0-9])", text))):
        if flag not in flags:
            bad.append(f"{cli}: {flag}: not a flag of argusctl (--help of it and its commands)")
else:
    bad.append(f"{cli}: missing")
cause_help = re.sub(r"\s+", " ", help_text)
for label in re.findall(r'\.label = "([a-z_]+)"', open("common/causes.c").read()):
    if not re.search(r"--cause.*\b%s\b" % label, cause_help):
        bad.append(f"argusctl --help: --cause does not list the cause {label} (common/causes.c)")

for b in dict.fromkeys(bad):
    print(b)
print(f"docs: {len(docs)} files checked, {len(dict.fromkeys(bad))} problems")
sys.exit(1 if bad else 0)
PY
