#!/usr/bin/env bash
# The monitoring files in deploy/: the alerting rules pass `promtool check
# rules` and their own `promtool test rules` cases (they fire on a straggler,
# not on a job with data skew only; spool growth and store failures fire);
# the example scrape config checks; the Grafana dashboard is JSON that jq and
# python parse, with a uid, a job variable and a query in every panel.
# (prometheus_series.sh checks that every series they name is exported.)
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || skip "no promtool (Debian package prometheus)"
D=$REPO/deploy
promtool check rules "$D/prometheus/argus-rules.yml" >"$T/check" 2>&1 ||
    fail "promtool check rules: $(cat "$T/check")"
grep -q "SUCCESS: [1-9][0-9]* rules found" "$T/check" || fail "no rules: $(cat "$T/check")"
(cd "$D/prometheus" && promtool test rules argus-rules.test.yml) >"$T/test" 2>&1 ||
    fail "promtool test rules: $(cat "$T/test")"
cp "$D/prometheus/argus-rules.yml" "$T/"
sed "s|/etc/prometheus/argus-rules.yml|$T/argus-rules.yml|" "$D/prometheus/prometheus.yml" >"$T/prometheus.yml"
promtool check config "$T/prometheus.yml" >"$T/config" 2>&1 || fail "prometheus.yml: $(cat "$T/config")"

g=$D/grafana/argus-dashboard.json
/usr/bin/python3 -m json.tool "$g" >/dev/null || fail "$g is not JSON"
if command -v jq >/dev/null; then
    [[ $(jq -r '.uid' "$g") == argus-jobs ]] || fail "$g: uid"
    [[ $(jq '[.panels[] | select((.targets // []) | length == 0)] | length' "$g") == 0 ]] ||
        fail "$g: a panel without a query"
    [[ $(jq -r '.templating.list[] | select(.name == "job") | .definition' "$g") == *argus_job_* ]] ||
        fail "$g: no job variable over the per-job series"
fi
echo "deploy prometheus ok"
