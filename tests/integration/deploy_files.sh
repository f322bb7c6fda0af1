#!/usr/bin/env bash
# The example configs in deploy/ are what the daemons print, they load back
# without error, argusctl reads its example, and the systemd units have the
# keys a production unit needs.
# The scrape config agrees with them: each daemon's http.listen port is the
# port of its scrape targets, on an address other hosts reach when the
# targets are other hosts. The prometheus-operator monitors of deploy/k8s
# load as YAML and fit their schema (tests/integration/k8s_monitors.py;
# deploy_k8s.sh checks them against the other manifests).
source "$(dirname "$0")/lib.sh"
for d in agent collector; do
    "$BIN/argus-$d" --print-config >"$T/$d.conf"
    diff -u "$REPO/deploy/config/$d.conf" "$T/$d.conf" \
        || fail "deploy/config/$d.conf is stale: regenerate it with argus-$d --print-config"
    "$BIN/argus-$d" --config "$REPO/deploy/config/$d.conf" --print-config >/dev/null \
        || fail "deploy/config/$d.conf does not load"
    u="$REPO/deploy/systemd/argus-$d.service"
    for key in Type=notify WatchdogSec= Restart=on-failure ExecReload= NoNewPrivileges=yes; do
        grep -q "^$key" "$u" || fail "$u lacks $key"
    done
done
# argusctl's example (/etc/argus/argusctl.conf): as shipped it sets nothing;
# each of its keys, uncommented, is what argusctl takes
mkdir -p "$T/xdg/argus"
sed 's/^#collectors = /collectors = /' "$REPO/deploy/config/argusctl.conf" >"$T/xdg/argus/argusctl.conf"
out=$(XDG_CONFIG_HOME=$T/xdg "$BIN/argusctl" collectors --job j1 2>&1) &&
    [[ $out == *"primary collector0"*"standby collector0"* ]] || fail "argusctl.conf example, collectors set: $out"
grep -q '^[a-z]' "$REPO/deploy/config/argusctl.conf" && fail "deploy/config/argusctl.conf sets a key: it ships commented"
# prometheus.yml scrapes the daemons where their defaults listen
/usr/bin/python3 - "$REPO/deploy" <<'PY' || fail "deploy/prometheus/prometheus.yml and deploy/config disagree"
import re, sys
d = sys.argv[1]
text = open(d + "/prometheus/prometheus.yml").read()
for daemon in ("agent", "collector"):
    conf = open("%s/config/%s.conf" % (d, daemon)).read()
    listen = re.search(r'^\[http\]\n(?:#.*\n)*listen = "([^"]*)"', conf, re.M).group(1)
    host, port = listen.rsplit(":", 1)
    block = text.split("job_name: argus-%s" % daemon, 1)[1].split("job_name:", 1)[0]
    targets = re.findall(r"'([^']+)'", block)
    assert targets, "no targets for argus-%s" % daemon
    for t in targets:
        th, tp = t.rsplit(":", 1)
        assert tp == port, "%s: port %s, but %s http.listen is %s" % (t, tp, daemon, listen)
        local = th in ("localhost", "127.0.0.1")
        assert local or not host.startswith("127."), \
            "%s is another host, but %s listens on %s" % (t, daemon, listen)
PY
if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
    /usr/bin/python3 - "$REPO" <<'PY' || fail "deploy/k8s monitors"
import sys, yaml
sys.path.insert(0, sys.argv[1] + "/tests/integration")
import k8s_monitors
errors = []
for f in ("servicemonitor.yaml", "podmonitor.yaml"):
    docs = [x for x in yaml.safe_load_all(open(sys.argv[1] + "/deploy/k8s/" + f)) if x]
    assert len(docs) == 1 and k8s_monitors.is_monitor(docs[0]), f
    k8s_monitors.walk_doc(f, docs[0], lambda p, m: errors.append("%s: %s" % (p, m)))
print("\n".join(errors))
sys.exit(1 if errors else 0)
PY
else
    for f in servicemonitor podmonitor; do
        grep -q '^apiVersion: monitoring.coreos.com/v1$' "$REPO/deploy/k8s/$f.yaml" ||
            fail "deploy/k8s/$f.yaml: no monitoring.coreos.com/v1 document"
    done
fi
# a bad file is refused with its line
printf '[spool]\ncap = lots\n' >"$T/bad.conf"
out=$("$BIN/argus-agent" --config "$T/bad.conf" 2>&1); rc=$?
[[ $rc == 2 && $out == *"bad.conf:2: spool.cap: 'lots' is not a size"* ]] || fail "bad config: rc $rc: $out"
echo "deploy files ok"
