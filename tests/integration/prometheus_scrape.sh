#!/usr/bin/env bash
# A real Prometheus (Debian's) scrapes the agent's and the collector's
# /metrics: both expositions pass `promtool check metrics` (format and lint),
# both targets are up, and the series an SRE graphs (agent steps and spool,
# collector ingest, the sources' own counters) arrive with sane values.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null && command -v promtool >/dev/null ||
    skip "no prometheus/promtool (Debian package prometheus)"
[[ -f $TRACE ]] || skip "no Kineto trace at $TRACE"

start_collector "$T/store"
start_agent "$T/spool" --replay.trace "$TRACE" --replay.ranks 4 --replay.rate 10 --replay.job prom
wait_for "agent steps" 20 bash -c "(( \$(curl -s 127.0.0.1:$APORT/metrics | awk '\$1==\"argus_agent_steps_total\"{print \$2}') > 0 ))"
for target in "agent $APORT" "collector $HPORT"; do
    set -- $target
    curl -s "127.0.0.1:$2/metrics" >"$T/$1.prom"
    promtool check metrics <"$T/$1.prom" >"$T/$1.lint" 2>&1 ||
        fail "$1 /metrics fails promtool check metrics: $(head -5 "$T/$1.lint")"
done

PPORT=$(free_port)
cat >"$T/prometheus.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: argus-agent
    static_configs: [{targets: ['127.0.0.1:$APORT']}]
  - job_name: argus-collector
    static_configs: [{targets: ['127.0.0.1:$HPORT']}]
YML
promtool check config "$T/prometheus.yml" >/dev/null || fail "prometheus.yml does not check"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
    --web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.log" 2>&1 &
PIDS+=($!)
wait_for "prometheus ready" 30 curl -sf "127.0.0.1:$PPORT/-/ready"

# query EXPR: the first value of an instant query, or nothing
query() {
    curl -s --get "127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
        /usr/bin/python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
wait_for "both targets up" 20 bash -c "[[ \$(curl -s --get 127.0.0.1:$PPORT/api/v1/query --data-urlencode 'query=sum(up)' | grep -o '\"2\"') ]]"
wait_for "agent steps in prometheus" 20 bash -c "curl -s --get 127.0.0.1:$PPORT/api/v1/query --data-urlencode 'query=argus_agent_steps_total > 0' | grep -q argus_agent_steps_total"
steps=$(query 'argus_agent_steps_total{job="argus-agent"}')
acks=$(query 'argus_ingest_acks_total{job="argus-collector"}')
up=$(query 'up{job="argus-collector"}')
sources=$(query 'count(argus_agent_source_up{job="argus-agent"})')
log "prometheus: agent steps $steps, collector acks $acks, collector up $up, $sources sources"
[[ $up == 1 ]] || fail "collector target not up in prometheus"
((${steps%.*} > 0)) || fail "argus_agent_steps_total is '$steps'"
((${acks%.*} > 0)) || fail "argus_ingest_acks_total is '$acks'"
((${sources%.*} >= 1)) || fail "no argus_agent_source_up series"
grep -q "level=error" "$T/prometheus.log" && fail "prometheus logged errors: $(grep level=error "$T/prometheus.log" | head -3)"
echo "prometheus scrape ok"
