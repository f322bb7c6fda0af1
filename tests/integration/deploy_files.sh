#!/usr/bin/env bash
# The example configs in deploy/ are what the daemons print, they load back
# without error, argusctl reads its example, and the systemd units have the keys a production unit needs.
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
# a bad file is refused with its line
printf '[spool]\ncap = lots\n' >"$T/bad.conf"
out=$("$BIN/argus-agent" --config "$T/bad.conf" 2>&1); rc=$?
[[ $rc == 2 && $out == *"bad.conf:2: spool.cap: 'lots' is not a size"* ]] || fail "bad config: rc $rc: $out"
echo "deploy files ok"
