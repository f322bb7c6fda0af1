#!/usr/bin/env bash
# Fleet series in a real TSDB from an HA pair of collectors: two collectors
# (remote_write.replica a and b) diagnose the same job (the simulator sends it
# to both, as an agent sends each batch to a job's primary and standby) and
# remote-write its per-job series into Debian's VictoriaMetrics:
#  - as sent: each series twice, replica="a" and replica="b";
#  - into a VictoriaMetrics set up for HA pairs (-relabelConfig dropping the
#    replica label, -dedup.minScrapeInterval): each series once, no replica
#    label, so fleet dashboards and sums do not double-count.
# Skips without the victoria-metrics package.
# test-cpu: idle: two small simulated jobs and two TSDBs, mostly waiting
source "$(dirname "$0")/lib.sh"
VM=${VM:-$(command -v victoria-metrics)}
[[ -x $VM ]] || skip "no victoria-metrics (Debian package victoria-metrics)"

RAW=$(free_port)
HA=$(free_port)
printf -- '- action: labeldrop\n  regex: replica\n' >"$T/relabel.yml"
start_vm() { # NAME PORT [flags...]
    local name=$1 port=$2; shift 2
    "$VM" -httpListenAddr "127.0.0.1:$port" -storageDataPath "$T/$name" -retentionPeriod 1d \
        -search.latencyOffset 1s -search.disableCache "$@" >"$T/$name.log" 2>&1 &
    PIDS+=($!)
    wait_for "victoria-metrics $name" 30 curl -sf "127.0.0.1:$port/health"
}
start_vm raw "$RAW"
start_vm ha "$HA" -relabelConfig "$T/relabel.yml" -dedup.minScrapeInterval 10s

# a remote_write.url takes one endpoint: the pair (a, b) writes to the HA
# TSDB, a second pair of the same kind to the raw one
C2=$(free_port) H2=$(free_port) C3=$(free_port) H3=$(free_port) C4=$(free_port) H4=$(free_port)
second() { # CPORT HPORT DIR TSDB_PORT REPLICA
    start_collector_on "$1" "$2" "$3" --remote_write.url "http://127.0.0.1:$4/api/v1/write" \
        --remote_write.interval 1s --remote_write.replica "$5"
}
second "$CPORT" "$HPORT" "$T/store-a" "$HA" a
second "$C2" "$H2" "$T/store-b" "$HA" b
second "$C3" "$H3" "$T/store-c" "$RAW" a
second "$C4" "$H4" "$T/store-d" "$RAW" b
for p in "$CPORT" "$C2" "$C3" "$C4"; do
    "$BIN/argus-sim" --collector "127.0.0.1:$p" --job ha --ranks 16 --steps 60 --rate 20 \
        --seed 5 >"$T/sim.$p.json" 2>&1 &
    PIDS+=($!)
done
wait_for "the simulated job on every collector" 120 bash -c \
    "! pgrep -f 'argus-sim --collector 127.0.0.1:($CPORT|$C2|$C3|$C4) ' >/dev/null"

# query PORT EXPR: "replica count" of argus_job_last_step{job="ha"} series
series() {
    curl -s --get "127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" |
        /usr/bin/python3 -c 'import json, sys
res = json.load(sys.stdin)["data"]["result"]
print(" ".join(sorted(r["metric"].get("replica", "-") for r in res)))'
}
wait_for "both replicas in the raw TSDB" 60 bash -c \
    "$(declare -f series); [[ \$(series $RAW 'argus_job_last_step{job=\"ha\"}') == 'a b' ]]"
log "raw: argus_job_last_step{job=\"ha\"} replicas: $(series "$RAW" 'argus_job_last_step{job="ha"}')"
wait_for "the pair's series in the HA TSDB" 60 bash -c \
    "$(declare -f series); [[ -n \$(series $HA 'argus_job_last_step{job=\"ha\"}') ]]"
sleep 3 # both collectors wrote a few times more
got=$(series "$HA" 'argus_job_last_step{job="ha"}')
[[ $got == "-" ]] || fail "the HA TSDB has argus_job_last_step{job=\"ha\"} as '$got', want one series without replica"
job_series() { # PORT: how many argus_job_* series of job ha the TSDB holds
    curl -s --get "127.0.0.1:$1/api/v1/query" \
        --data-urlencode 'query=count({job="ha",__name__=~"argus_job_.*"})' |
        /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'
}
n=$(job_series "$HA")
m=$(job_series "$RAW")
log "series of job ha: $m as sent by the pair, $n in the HA TSDB"
((m == 2 * n && n > 0)) || fail "the pair sent $m series, the HA TSDB keeps $n: want half"
echo "remote write to VictoriaMetrics ok: an HA pair's series counted once"
