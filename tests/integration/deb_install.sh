#!/usr/bin/env bash
# The Debian packages (make deb) on this very system: they build (or are
# taken from build/deb when newer than every source), lintian finds no error,
# dpkg -i installs them, the binaries are stripped with their debug symbols
# in the -dbgsym packages, deploy/ is under /usr/share/argus with every file
# its README names, the units pass systemd-analyze verify, the version is
# the Makefile's and the k8s manifests' image tag; the collector and the
# agent start from the installed units (systemctl, when systemd is PID 1) or
# binaries with the installed configs (elsewhere), answer /healthz, the
# installed argusctl finds the collector through /etc/argus/argusctl.conf,
# and installing the packages again keeps the edited conffiles.
# Then dpkg --purge leaves nothing: no file the packages listed, no
# /etc/argus, /var/lib/argus or /usr/share/argus. The purge runs on failure
# too. Skips when an argus package or path is already there (never touch
# what the test did not install), or the packaging tools are missing.
# test-cpu: all: make deb compiles every program (build/pkg)
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || skip "needs root (dpkg -i into this system)"
for t in dpkg-buildpackage dh lintian fakeroot file readelf; do
    command -v "$t" >/dev/null || skip "$t not installed (make deps: debhelper, dpkg-dev, lintian, fakeroot)"
done
PKGS=(argus-common argus-agent argus-collector argusctl argus-agent-dbgsym argus-collector-dbgsym argusctl-dbgsym)
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed' &&
        skip "$p is already installed here: this test installs and purges it"
done
for f in /usr/bin/argus-agent /usr/bin/argus-collector /usr/bin/argusctl /usr/bin/argus-sim \
    /etc/argus /var/lib/argus /var/lib/private/argus /usr/share/argus /usr/lib/argus /run/argus; do
    [[ -e $f ]] && skip "$f exists and is no package's: this test would install over it and purge it"
done
SYSTEMD=0
[[ $(ps -o comm= -p 1) == systemd && -d /run/systemd/system ]] && SYSTEMD=1
VERSION=$(sed -n 's/^ARGUS_VERSION ?= //p' "$REPO/Makefile")
DEB=$REPO/build/deb

# --- build (or take fresh packages) and lintian -------------------------------
# fresh: every package is there, and no file git knows (tracked or new; tests/
# aside) is newer than the .changes (make deb DEB_BUILD_OPTIONS=nostrip: not fresh)
changes=$(ls "$DEB"/argus_*.changes 2>/dev/null | head -1)
newer=yes
if [[ -n $changes ]] && files=$(cd "$REPO" && git ls-files -co --exclude-standard 2>/dev/null); then
    newer=
    while read -r f; do [[ $f != tests/* && $REPO/$f -nt $changes ]] && { newer=$f; break; }; done <<<"$files"
    for p in "${PKGS[@]}"; do ls "$DEB/${p}_${VERSION}_"*.deb >/dev/null 2>&1 || newer="no $p"; done
fi
if [[ -n $newer ]]; then
    log "make deb"
    make -C "$REPO" --no-print-directory deb >"$T/deb.log" 2>&1 || fail "make deb failed: $(tail -20 "$T/deb.log")"
    changes=$(ls "$DEB"/argus_*.changes | head -1)
fi
debs=()
for p in "${PKGS[@]}"; do
    f=$(ls "$DEB/${p}_${VERSION}_"*.deb 2>/dev/null) || fail "no $p ${VERSION} package in build/deb"
    debs+=("$f")
done
lintian "$changes" >"$T/lintian.log" 2>&1
grep '^E:' "$T/lintian.log" && fail "lintian errors (above)"
grep '^W:' "$T/lintian.log" | sed 's/^/lintian: /'

# --- install; the trap purges whatever happens ---------------------------------
finish() {
    local rc=$?
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    ((SYSTEMD)) && systemctl stop argus-agent argus-collector 2>/dev/null
    [[ -n ${INSTALLED:-} ]] && dpkg --purge "${PKGS[@]}" >>"$T/purge.log" 2>&1
    cleanup
    exit $rc
}
trap finish EXIT
INSTALLED=1
dpkg -i "${debs[@]}" >"$T/install.log" 2>&1 || fail "dpkg -i failed: $(tail -20 "$T/install.log")"
for p in "${PKGS[@]}"; do
    [[ $(dpkg-query -W -f='${Status} ${Version}' "$p") == "install ok installed $VERSION" ]] ||
        fail "$p is not installed at $VERSION: $(dpkg-query -W -f='${Status} ${Version}' "$p")"
    dpkg -L "$p" >>"$T/files.list"
done

# stripped, with the debug symbols in the -dbgsym packages (by build id)
for f in /usr/bin/argus-agent /usr/bin/argus-collector /usr/bin/argusctl /usr/bin/argus-sim \
    /usr/lib/argus/libargus-marker.so; do
    out=$(file -L "$f")
    [[ $out == *", stripped"* ]] || fail "$f is not stripped: $out"
    id=$(readelf -n "$f" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
    [[ -n $id && -f /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug ]] ||
        fail "$f: no /usr/lib/debug/.build-id file for build id '$id' (the -dbgsym packages)"
done

# deploy/ under /usr/share/argus: every file the installed README names
D=/usr/share/argus/deploy
for f in prometheus/argus-rules.yml prometheus/prometheus.yml grafana/argus-dashboard.json \
    alertmanager/alertmanager.yml k8s/agent-daemonset.yaml k8s/collector-statefulset.yaml \
    docker/Dockerfile config/argusctl.conf; do
    [[ -f $D/$f ]] || fail "$D/$f is not installed"
done
[[ -x $D/pki/make-pki.sh && -x $D/k8s/gen-configmaps.sh ]] || fail "make-pki.sh or gen-configmaps.sh not installed executable"
named=$(grep -o '`[a-z][a-z0-9-]*/[a-z0-9_./-]*\.\(yml\|yaml\|json\|sh\|conf\|service\)' "$D/README.md" | tr -d '`' | grep -v '^tests/' | sort -u)
[[ $(wc -l <<<"$named") -ge 8 ]] || fail "the installed deploy README names too few files: $named"
for f in $named; do [[ -f $D/$f ]] || fail "$D/README.md names $f, not installed"; done
for f in README.md deploy.md docs/operations.md docs/design.md; do
    [[ -f /usr/share/doc/argus/$f ]] || fail "/usr/share/doc/argus/$f is not installed (uncompressed)"
done
# the image the manifests run is the one deploy/docker/Dockerfile documents
for f in "$D"/k8s/agent-daemonset.yaml "$D"/k8s/collector-statefulset.yaml; do
    img=$(sed -n 's/^ *image: \(argus:.*\)/\1/p' "$f" | sort -u)
    [[ $img == "argus:$VERSION" ]] || fail "$f runs image '$img', not argus:$VERSION"
done
grep -q -- "-t argus:$VERSION " "$D/docker/Dockerfile" || fail "the Dockerfile does not build argus:$VERSION"

# configs are conffiles; the units are sound
for c in agent:agent.conf collector:collector.conf ctl:argusctl.conf; do
    p=argus-${c%%:*}; [[ $p == argus-ctl ]] && p=argusctl
    dpkg-query -W -f='${Conffiles}' "$p" | grep -q " /etc/argus/${c#*:} " || fail "/etc/argus/${c#*:} is not a conffile of $p"
done
systemd-analyze verify /lib/systemd/system/argus-agent.service /lib/systemd/system/argus-collector.service \
    >"$T/verify.log" 2>&1 || fail "systemd-analyze verify: $(cat "$T/verify.log")"
((SYSTEMD)) && { systemctl is-enabled argus-collector >/dev/null 2>&1 && fail "argus-collector was enabled by the install"; }

# --- start them from the installed configs ------------------------------------
# conf_set FILE SECTION KEY VALUE: KEY's line in the first [SECTION] that has it
conf_set() {
    awk -v s="[$2]" -v k="$3" -v v="$4" '/^\[/ { in_s = ($0 == s) }
        in_s && !done && $1 == k && $2 == "=" { print k " = " v; done = 1; next } { print }
        END { exit !done }' "$1" >"$1.new" && mv "$1.new" "$1" || fail "$1: no $3 in [$2]"
}
APORT=$(free_port)
conf_set /etc/argus/collector.conf grpc listen "\"127.0.0.1:$CPORT\""
conf_set /etc/argus/collector.conf grpc plaintext true
conf_set /etc/argus/collector.conf http listen "\"127.0.0.1:$HPORT\""
conf_set /etc/argus/agent.conf collector address "\"127.0.0.1:$CPORT\""
conf_set /etc/argus/agent.conf grpc plaintext true
conf_set /etc/argus/agent.conf http listen "\"127.0.0.1:$APORT\""
if ((SYSTEMD)); then
    systemctl start argus-collector argus-agent || fail "systemctl start failed: $(journalctl -n 30 -u 'argus-*' --no-pager)"
else
    conf_set /etc/argus/agent.conf cupti socket "\"$T/cupti.sock\"" # no /run/argus outside a unit
    /usr/bin/argus-collector --config /etc/argus/collector.conf >>"$T/collector.log" 2>&1 &
    PIDS+=($!)
    isolated /usr/bin/argus-agent --config /etc/argus/agent.conf >>"$T/agent.log" 2>&1 &
    PIDS+=($!)
fi
on_fail() { tail -20 "$T/collector.log" "$T/agent.log" 2>/dev/null; ((SYSTEMD)) && journalctl -n 40 -u 'argus-*' --no-pager; }
wait_for "collector /healthz" 30 curl -sf "http://127.0.0.1:$HPORT/healthz"
wait_for "agent /healthz" 30 curl -sf "http://127.0.0.1:$APORT/healthz"
wait_for "the agent connected" 30 bash -c "curl -sf http://127.0.0.1:$APORT/metrics | grep -q '^argus_agent_collector_connected 1'"
# the installed argusctl finds the collector by the installed example, once set
sed -i "s|^#collector = .*|collector = 127.0.0.1:$CPORT|" /etc/argus/argusctl.conf
/usr/bin/argusctl --timeout 5s jobs >"$T/jobs.out" 2>&1 || fail "argusctl with /etc/argus/argusctl.conf: $(cat "$T/jobs.out")"
log "installed daemons answer /healthz; argusctl found the collector by /etc/argus/argusctl.conf"
# an upgrade (the same packages again) keeps the edited conffiles
dpkg -i "${debs[@]}" >>"$T/install.log" 2>&1 || fail "dpkg -i over the installed packages failed: $(tail -20 "$T/install.log")"
grep -q "^listen = \"127.0.0.1:$CPORT\"" /etc/argus/collector.conf || fail "the upgrade replaced the edited collector.conf"
grep -q "^collector = 127.0.0.1:$CPORT" /etc/argus/argusctl.conf || fail "the upgrade replaced the edited argusctl.conf"
wait_for "collector /healthz after the upgrade" 30 curl -sf "http://127.0.0.1:$HPORT/healthz"

# --- purge: nothing left -----------------------------------------------------
if ((SYSTEMD)); then systemctl stop argus-agent argus-collector; else
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait
    PIDS=()
fi
# their state, which the purge must take too: the spool and the store
[[ -d /var/lib/argus/spool && -e /var/lib/argus/collector ]] || fail "no spool or store under /var/lib/argus: $(ls -la /var/lib/argus)"
dpkg --purge "${PKGS[@]}" >"$T/purge.log" 2>&1 || fail "dpkg --purge failed: $(tail -20 "$T/purge.log")"
INSTALLED=
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed' && fail "$p is still installed"
done
while read -r f; do
    [[ -e $f && ! -d $f ]] && fail "$f is left after the purge"
done <"$T/files.list"
for f in /usr/bin/argus-agent /usr/bin/argus-collector /usr/bin/argusctl /usr/bin/argus-sim \
    /etc/argus /var/lib/argus /var/lib/private/argus /usr/share/argus /usr/lib/argus /usr/share/doc/argus \
    /run/argus; do
    [[ -e $f ]] && fail "$f is left after the purge: $(ls -la "$f" | head -5)"
done
echo "deb install ok"
