#!/usr/bin/env bash
# make install like a package: into DESTDIR, the binaries, libraries, units,
# example configs (never overwritten; argusctl's too), deploy/ under
# share/argus/deploy, the README and docs/ under share/doc/argus
# where the units' Documentation= points, a man page per binary that man
# renders (generated from the config and command tables), and argus.py in a
# directory on /usr/bin/python3's sys.path, loading the installed marker
# library. PREFIX=/usr/local moves all of it, units and argus.py included.
source "$(dirname "$0")/lib.sh"
command -v man >/dev/null && command -v groff >/dev/null || skip "man and groff not installed (make deps)"
[[ -z ${ARGUS_BUILD:-} || ${ARGUS_BUILD} -ef $REPO/build ]] || skip "ARGUS_BUILD is $ARGUS_BUILD, not build/: make install installs build/"

D=$T/root
make -C "$REPO" --no-print-directory install DESTDIR="$D" >"$T/install.log" 2>&1 ||
    fail "make install failed: $(tail -5 "$T/install.log")"
for f in usr/bin/argus-agent usr/bin/argus-collector usr/bin/argusctl usr/bin/argus-sim \
    usr/lib/argus/libargus-marker.so lib/systemd/system/argus-agent.service \
    lib/systemd/system/argus-collector.service etc/argus/agent.conf etc/argus/collector.conf \
    usr/share/doc/argus/README.md usr/share/man/man8/argus-agent.8 \
    usr/share/man/man8/argus-collector.8 usr/share/man/man1/argusctl.1 \
    usr/share/man/man1/argus-sim.1 usr/lib/python3/dist-packages/argus.py etc/argus/argusctl.conf \
    usr/share/argus/deploy/README.md usr/share/argus/deploy/prometheus/argus-rules.yml \
    usr/share/argus/deploy/grafana/argus-dashboard.json usr/share/argus/deploy/k8s/agent-daemonset.yaml \
    usr/share/argus/deploy/docker/Dockerfile; do
    [[ -f $D/$f ]] || fail "make install did not install /$f"
done
[[ -x $D/usr/bin/argusctl ]] || fail "argusctl not executable"
[[ -x $D/usr/share/argus/deploy/pki/make-pki.sh ]] || fail "make-pki.sh not installed executable"
cmp -s "$REPO/README.md" "$D/usr/share/doc/argus/README.md" || fail "README differs"
for f in "$REPO"/docs/*.md; do # the README links to them: docs/ beside it
    cmp -s "$f" "$D/usr/share/doc/argus/docs/${f##*/}" || fail "docs/${f##*/} not installed beside the README"
done

for u in argus-agent argus-collector; do
    unit=$D/lib/systemd/system/$u.service
    doc=$(sed -n 's|^Documentation=file://||p' "$unit")
    [[ $doc == /usr/share/doc/argus/README.md && -f $D$doc ]] ||
        fail "$u: Documentation=$doc is not the installed README"
    exe=$(sed -n 's|^ExecStart=\([^ ]*\).*|\1|p' "$unit")
    [[ -x $D$exe ]] || fail "$u: ExecStart=$exe is not installed"
    # the example config sets no TLS (certificates are the operator's to
    # install): the check says so, and passes once the choice is made
    out=$("$D$exe" --config "$D/etc/argus/${u#argus-}.conf" --check-config 2>&1) &&
        fail "$u: --check-config passed a config that cannot start (no TLS choice)"
    [[ $out == *"no TLS configured"* ]] || fail "$u: --check-config without TLS: $out"
    "$D$exe" --config "$D/etc/argus/${u#argus-}.conf" --check-config --grpc.plaintext true \
        >/dev/null || fail "$u: the installed config does not pass --check-config"
done

# man renders every page, and each page documents its program's keys
for page in man8/argus-agent.8:probes.enable man8/argus-collector.8:diag.min_hits \
    man1/argusctl.1:stragglers man1/argus-sim.1:scenario; do
    file=$D/usr/share/man/${page%%:*} key=${page#*:} name=$(basename "${page%%:*}")
    name=${name%.*}
    out=$(MANWIDTH=100 man -l "$file" 2>"$T/man.err") || fail "man -l $file failed: $(cat "$T/man.err")"
    [[ $out == *NAME* && $out == *"$name"* && $out == *"$key"* && $out == *SYNOPSIS* ]] ||
        fail "$name's page lacks NAME, SYNOPSIS or $key: $(head -20 <<<"$out")"
    groff -man -Tascii -z "$file" 2>"$T/groff.err"
    grep -iq error "$T/groff.err" && fail "groff errors in $name's page: $(cat "$T/groff.err")"
    cmp -s "$file" <("$D/usr/bin/$name" --man) || fail "$name's page is not what $name --man writes"
done
grep -q '^\.SH COMMANDS' "$D/usr/share/man/man1/argusctl.1" || fail "argusctl.1 has no commands"

# argus.py: its directory is on /usr/bin/python3's path (so 'import argus'
# finds it without PYTHONPATH once installed into /), and it loads the
# installed library
/usr/bin/python3 -c 'import sys; sys.exit("/usr/lib/python3/dist-packages" not in sys.path)' ||
    fail "/usr/lib/python3/dist-packages is not on /usr/bin/python3's sys.path"
/usr/bin/python3 - "$D" <<'PY' || fail "the installed argus.py does not load the installed library"
import importlib.util, os, sys
root = sys.argv[1]
spec = importlib.util.spec_from_file_location("argus", root + "/usr/lib/python3/dist-packages/argus.py")
argus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(argus)
assert argus._DEFAULT == "/usr/lib/argus/libargus-marker.so", argus._DEFAULT
assert os.path.exists(root + argus._DEFAULT), argus._DEFAULT
PY

# configs are never overwritten
echo "# mine" >>"$D/etc/argus/agent.conf"
make -C "$REPO" --no-print-directory install DESTDIR="$D" >>"$T/install.log" 2>&1 || fail "second install failed"
tail -1 "$D/etc/argus/agent.conf" | grep -q "# mine" || fail "make install overwrote /etc/argus/agent.conf"

# another prefix: units, docs and argus.py follow it
L=$T/local
make -C "$REPO" --no-print-directory install DESTDIR="$L" PREFIX=/usr/local >>"$T/install.log" 2>&1 ||
    fail "make install PREFIX=/usr/local failed"
unit=$L/lib/systemd/system/argus-collector.service
grep -q '^ExecStart=/usr/local/bin/argus-collector ' "$unit" || fail "unit ExecStart not under /usr/local"
grep -q '^Documentation=file:///usr/local/share/doc/argus/README.md' "$unit" || fail "unit docs not under /usr/local"
grep -q '^_DEFAULT = "/usr/local/lib/argus/libargus-marker.so"' "$L/usr/local/lib/python3/dist-packages/argus.py" ||
    fail "argus.py does not look in /usr/local/lib/argus"
[[ -f $L/usr/local/share/man/man8/argus-agent.8 ]] || fail "no man page under /usr/local"
echo "install ok"
