#!/usr/bin/env bash
# The per-job series in a real Prometheus (Debian's), both ways:
#  - scraped (honor_labels, as deploy/prometheus/prometheus.yml does): a
#    PromQL query over argus_job_top_straggler_slowdown and argus_job_suspects
#    finds the straggling job and the culprit's rank (with its node and GPU,
#    well above 1.0 = healthy), and nothing for a healthy job run next to it;
#  - remote write (remote_write.url) into a second Prometheus started with
#    --web.enable-remote-write-receiver: the same series arrive there, each
#    with label collector (the collector's host name: no cluster.self).
# And every series that deploy/prometheus/argus-rules.yml and
# deploy/grafana/argus-dashboard.json name is in the collector's or an
# agent's /metrics.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null && command -v promtool >/dev/null ||
    skip "no prometheus/promtool (Debian package prometheus)"

SCRAPER=$(free_port)
RECEIVER=$(free_port)
start_prometheus() { # NAME PORT [flags...]
    local name=$1 port=$2; shift 2
    prometheus --config.file="$T/$name.yml" --storage.tsdb.path="$T/$name" \
        --web.listen-address="127.0.0.1:$port" "$@" >"$T/$name.log" 2>&1 &
    PIDS+=($!)
    wait_for "prometheus $name ready" 60 curl -sf "127.0.0.1:$port/-/ready"
}
# query PORT EXPR: the result vector of an instant query, one "labels value" line each
query() {
    curl -s --get "127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" |
        /usr/bin/python3 -c 'import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    m = r["metric"]
    print(",".join("%s=%s" % (k, m[k]) for k in sorted(m) if k not in ("instance", "__name__")), r["value"][1])'
}

cat >"$T/receiver.yml" <<YML
global: {scrape_interval: 1h}
YML
start_prometheus receiver "$RECEIVER" --web.enable-remote-write-receiver
start_collector "$T/store" --remote_write.url "http://127.0.0.1:$RECEIVER/api/v1/write" \
    --remote_write.interval 1s
start_agent "$T/spool"

cat >"$T/scraper.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: argus-collector
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$HPORT']}]
  - job_name: argus-agent
    static_configs: [{targets: ['127.0.0.1:$APORT']}]
YML
promtool check config "$T/scraper.yml" >/dev/null || fail "scraper config does not check"
start_prometheus scraper "$SCRAPER"

for scn in compute-straggler healthy; do
    "$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$scn" --scenario "$scn" --ranks 16 \
        --steps 120 --rate 50 --steps_per_batch 2 --tp 2 --seed 7 >"$T/$scn.json" ||
        fail "$scn: sim failed: $(cat "$T/$scn.json")"
done
culprit=$(tail -1 "$T/compute-straggler.json" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')
log "sim done: compute-straggler culprit rank $culprit"

curl -s "127.0.0.1:$HPORT/metrics" >"$T/collector.prom"
promtool check metrics <"$T/collector.prom" >"$T/lint" 2>&1 ||
    fail "collector /metrics fails promtool check metrics: $(head -5 "$T/lint")"

# the PromQL an on-call would write: which job straggles, and which rank
want="job=compute-straggler,rank=$culprit"
straggler() { # PORT: the top straggler of a job with a rank-level suspect is $want
    query "$1" 'max by (job, rank) (topk(1, argus_job_top_straggler_slowdown and on (job) (sum by (job) (argus_job_suspects{cause=~"compute|link|host|silent"}) > 0)))' \
        >"$T/straggler.$1"
    grep -q "^$want " "$T/straggler.$1"
}
export -f query straggler
export want T
wait_for "scraped PromQL finds $want" 60 bash -c "straggler $SCRAPER"
query "$SCRAPER" 'argus_job_suspects{cause="compute"} > 0' >"$T/compute.txt"
[[ $(cat "$T/compute.txt") == "cause=compute,job=compute-straggler "* ]] ||
    fail "compute suspects by job: $(cat "$T/compute.txt")"
[[ -z $(query "$SCRAPER" 'argus_job_top_straggler_slowdown{job="healthy"}') ]] ||
    fail "the healthy job has a top straggler"
# one top straggler per job, with its node and GPU, on the slowdown scale
# (the sim's straggler runs its forward and backward 1.6x)
top=$(query "$SCRAPER" 'argus_job_top_straggler_slowdown{job="compute-straggler"}')
[[ $(wc -l <<<"$top") == 1 && $top == cause=compute,gpu=[0-9]*,job=compute-straggler,node=?*,rank=$culprit\ * ]] ||
    fail "top straggler series: $top"
/usr/bin/python3 -c "import sys; sys.exit(not 1.2 < float('${top##* }') < 3)" ||
    fail "top straggler slowdown ${top##* }: want well above 1.0"
lvl=$(query "$SCRAPER" 'argus_job_top_straggler_level_score{job="compute-straggler"}')
[[ $lvl == gpu=*,job=compute-straggler,level=L[23],node=*,rank=$culprit,statistic=*\ * ]] ||
    fail "top straggler level score: $lvl"
[[ -z $(query "$SCRAPER" 'argus_job_suspects{job="healthy"} > 0') ]] ||
    fail "the healthy job has suspects: $(query "$SCRAPER" 'argus_job_suspects{job="healthy"} > 0')"
p50=$(query "$SCRAPER" 'argus_job_step_seconds_p50{job="healthy"}' | awk '{print $2}')
max=$(query "$SCRAPER" 'argus_job_step_seconds_max{job="healthy"}' | awk '{print $2}')
/usr/bin/python3 -c "import sys; p, m = float('$p50'), float('$max'); sys.exit(not (0 < p <= m < 10))" ||
    fail "healthy step time p50 '$p50' max '$max'"
for d in argus-collector argus-agent; do
    [[ $(query "$SCRAPER" "argus_build_info{program=\"$d\"}") == *"program=$d,"*"version="*" 1" ]] ||
        fail "no argus_build_info for $d"
    [[ -n $(query "$SCRAPER" "process_resident_memory_bytes{job=\"$d\"} > 0") ]] ||
        fail "no process_resident_memory_bytes for $d"
done
log "scraped: $want, healthy job quiet, p50 $p50 s, max $max s"

# remote write: the same answer from the receiving Prometheus
wait_for "remote-written PromQL finds $want" 60 bash -c "straggler $RECEIVER"
coll=$(query "$RECEIVER" 'count by (collector) (argus_job_last_step)')
[[ $coll == "collector=$(hostname) 2" ]] || fail "remote-written series by collector: $coll"
wait_for "remote write counted" 20 bash -c \
    "(( \$(curl -s 127.0.0.1:$HPORT/metrics | awk '\$1==\"argus_remote_write_samples_sent_total\"{print \$2}') > 0 ))"
curl -s "127.0.0.1:$HPORT/metrics" >"$T/collector.prom"
for m in argus_remote_write_samples_dropped_total argus_remote_write_samples_rejected_total; do
    [[ $(awk -v m=$m '$1 == m {print $2}' "$T/collector.prom") == 0 ]] || fail "$m is not 0"
done
grep -q "level=error" "$T/receiver.log" && fail "receiver logged errors: $(grep level=error "$T/receiver.log" | head -3)"

# every series the shipped rules and dashboard use exists
curl -s "127.0.0.1:$APORT/metrics" >"$T/agent.prom"
cat "$T/collector.prom" "$T/agent.prom" | awk '!/^#/ {sub(/[{ ].*/, ""); print}' | sort -u >"$T/have"
/usr/bin/python3 - "$REPO/deploy/prometheus/argus-rules.yml" "$REPO/deploy/grafana/argus-dashboard.json" \
    >"$T/exprs" <<'PY' || fail "cannot read the expressions of the rules and the dashboard"
import json, sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]:
        print(r["expr"])
for p in json.load(open(sys.argv[2]))["panels"]:
    for t in p["targets"]:
        print(t["expr"])
PY
grep -ohE '\b(argus|process)_[a-z0-9_]+' "$T/exprs" | sort -u >"$T/used"
missing=$(comm -23 "$T/used" "$T/have")
[[ -z $missing ]] || fail "rules or dashboard name series nobody exports: $missing"
log "rules and dashboard use $(wc -l <"$T/used") series, all exported"
echo "prometheus series ok"
