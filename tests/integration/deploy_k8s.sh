#!/usr/bin/env bash
# deploy/k8s: every document is a valid object of its kind (the kubernetes
# client's models, python3-kubernetes), the ConfigMaps are what
# gen-configmaps.sh makes of the daemons' --print-config, the embedded configs
# pass --check-config with the containers' args, and ports and paths agree
# (k8s_check.py); the collector set, the PodDisruptionBudgets and the
# Alertmanager cluster agree with each other (k8s_set.py). Broken copies must
# be refused, each with its reason.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import kubernetes.client, yaml' 2>/dev/null \
    || skip "python3-kubernetes or python3-yaml missing (make deps)"
K8S=$REPO/deploy/k8s
CHECK=(/usr/bin/python3 "$REPO/tests/integration/k8s_check.py" --bin "$BIN" --conf-dir "$REPO/deploy/config")

# the ConfigMaps are current
mkdir -p "$T/gen"
"$K8S/gen-configmaps.sh" "$BIN" "$T/gen" || fail "gen-configmaps.sh"
for f in agent-configmap.yaml collector-configmap.yaml alertmanager-configmap.yaml; do
    diff -u "$K8S/$f" "$T/gen/$f" || fail "deploy/k8s/$f is stale: run deploy/k8s/gen-configmaps.sh"
done

out=$("${CHECK[@]}" "$K8S" 2>&1) || fail "deploy/k8s does not validate: $out"
echo "$out"
n=$(grep -c '^kind:' <(cat "$K8S"/*.yaml "$K8S"/examples/*.yaml))
[[ $out == "ok: $n documents" ]] || fail "expected $n documents checked: $out"

# broken copies: sed EXPR on FILE, then the checker must fail naming WANT
expect_error() {
    local file=$1 expr=$2 want=$3
    rm -rf "$T/bad" && cp -r "$K8S" "$T/bad"
    sed -i -e "$expr" "$T/bad/$file"
    cmp -s "$K8S/$file" "$T/bad/$file" && fail "sed '$expr' changed nothing in $file"
    local o rc
    o=$("${CHECK[@]}" "$T/bad" 2>&1); rc=$?
    [[ $rc == 1 && $o == *"$want"* ]] || fail "$file with '$expr': rc $rc, want '$want': $o"
    log "refused: $(grep -F -- "$want" <<<"$o" | head -1)"
}
# unknown field, wrong type, missing required field, unknown kind
expect_error agent-daemonset.yaml 's/^\( *\)hostPID: true/\1hostPid: true/' \
    "unknown field 'hostPid' in V1PodSpec"
expect_error collector-statefulset.yaml 's/replicas: 3/replicas: "three"/' \
    'spec.replicas: expected an integer, got string'
expect_error collector-service.yaml 's/^      port: 7702$/      appProtocol: http/' \
    'V1ServicePort: Invalid value for `port`, must not be `None`'
expect_error agent-daemonset.yaml 's/^kind: DaemonSet/kind: DaemonSett/' \
    'unknown apiVersion/kind apps/v1/DaemonSett'
expect_error agent-daemonset.yaml 's/^\( *\)privileged: false/\1privileged: "no"/' \
    'privileged: expected a boolean'
# a bad config key and a bad value in a ConfigMap
expect_error agent-configmap.yaml 's/^    max_steps = 512/    max_stepz = 512/' \
    "argus-agent --check-config with the container's args"
expect_error collector-configmap.yaml 's/^    workers = 2/    workers = many/' \
    "argus-collector --check-config with the container's args"
# ports and paths that disagree
expect_error collector-configmap.yaml 's/^    listen = "0.0.0.0:7700"/    listen = "0.0.0.0:7800"/' \
    'grpc.listen 0.0.0.0:7800: the port differs from deploy/config/collector.conf'
expect_error agent-configmap.yaml 's|^    dir = "/var/lib/argus/spool"|    dir = "/var/lib/argus/spool2"|' \
    'spool.dir /var/lib/argus/spool2 differs from deploy/config/agent.conf'
expect_error agent-daemonset.yaml 's/"BPF", //' 'capability BPF missing'
expect_error collector-service.yaml 's/targetPort: grpc/targetPort: grpcx/' \
    'targetPort grpcx is not a containerPort'
expect_error agent-configmap.yaml 's/argus-collector.argus.svc:7700/argus-collector.argus.svc:7799/' \
    'Service argus-collector has no port 7799'
expect_error examples/job-pod.yaml 's|value: /run/argus/cupti.sock|value: /tmp/cupti.sock|' \
    'ARGUS_AGENT_SOCKET /tmp/cupti.sock is not on a hostPath volume'
expect_error examples/job-pod.yaml 's|path: /var/lib/argus/lib|path: /usr/lib/argus|' \
    'CUDA_INJECTION64_PATH /opt/argus/lib/libargus-cupti.so is /usr/lib/argus/libargus-cupti.so on the node'
# the collector set: one set for agents and collectors, of ready pods under
# their stable names, each pod itself, one collector drained at a time
expect_error collector-statefulset.yaml '/- --cluster.dns/,+1d' \
    '3 replicas but neither cluster.dns nor cluster.set'
expect_error collector-statefulset.yaml \
    's/- argus-collector-headless.argus.svc.cluster.local:7700/- argus-collector.argus.svc.cluster.local:7700/' \
    'Service argus-collector is not headless'
expect_error collector-service.yaml 's/publishNotReadyAddresses: false/publishNotReadyAddresses: true/' \
    'Service argus-collector-headless publishes not-ready addresses'
expect_error collector-statefulset.yaml '0,/- \$(POD_NAME)$/s//- argus-collector/' \
    "cluster.self argus-collector: must be the pod's name"
expect_error agent-daemonset.yaml \
    's/- argus-collector-headless.argus.svc.cluster.local:7700/- argus-collector.argus.svc:7700/' \
    "collector.dns argus-collector.argus.svc:7700 is not the collectors' cluster.dns"
expect_error agent-daemonset.yaml '/- --collector.dns/,+1d' \
    'no collector.dns or collector.set but 3 collectors'
expect_error pdb.yaml '1,/^---/d' 'no PodDisruptionBudget covers the 3 collectors'
expect_error pdb.yaml '0,/maxUnavailable: 1/s//maxUnavailable: 2/' \
    'a PodDisruptionBudget lets 2 collectors go at once'
expect_error pdb.yaml '0,/maxUnavailable: 1/s//maxUnavailable: 0/' \
    'PodDisruptionBudget argus-collector lets no pod of argus-collector go'
expect_error pdb.yaml 's/^      app.kubernetes.io\/name: argus-alertmanager$/      app.kubernetes.io\/name: argus-am/' \
    'PodDisruptionBudget argus-alertmanager selects no pod template here'
# the Alertmanager cluster: every replica a peer, gossip on TCP and UDP,
# every member sent to by the collectors, a config amtool takes
expect_error alertmanager-statefulset.yaml 's/replicas: 2/replicas: 3/' \
    '--cluster.peer argus-alertmanager-2.argus-alertmanager-headless.argus.svc:9094 missing'
expect_error alertmanager-statefulset.yaml 's/--cluster.peer=argus-alertmanager-1/--cluster.peer=argus-alertmanager-7/' \
    '--cluster.peer argus-alertmanager-7.argus-alertmanager-headless.argus.svc:9094 is no replica'
expect_error alertmanager-service.yaml 's/publishNotReadyAddresses: true/publishNotReadyAddresses: false/' \
    'Service argus-alertmanager-headless must publish not-ready addresses'
expect_error alertmanager-service.yaml '/protocol: UDP/d' \
    'Service argus-alertmanager-headless has no gossip port 9094/UDP'
expect_error collector-configmap.yaml 's/,http:\/\/argus-alertmanager-1[^"]*"/"/' \
    'alerts.alertmanager does not send to argus-alertmanager-1.argus-alertmanager-headless.argus.svc:9093'
command -v amtool >/dev/null &&
    expect_error alertmanager-configmap.yaml 's/receiver: ml-infra-oncall/receiver: nobody/' \
        'amtool check-config'
# the prometheus-operator monitors: their schema, and they scrape what exists
expect_error servicemonitor.yaml 's/^\( *\)honorLabels: true/\1honorLabel: true/' \
    "unknown field 'honorLabel'"
expect_error podmonitor.yaml 's/interval: 15s/interval: 15 seconds/' \
    "'15 seconds' is not a Prometheus duration"
expect_error servicemonitor.yaml 's/honorLabels: true/honorLabels: false/' \
    "the collector's endpoints need honorLabels: true"
expect_error servicemonitor.yaml 's/- port: http/- port: metrics/' \
    "endpoint port 'metrics' is not a port of Service argus-collector-headless"
expect_error podmonitor.yaml 's/- port: http/- port: web/' \
    "endpoint port 'web' is not a container port of DaemonSet argus-agent"
expect_error podmonitor.yaml 's/app.kubernetes.io\/name: argus-agent$/app.kubernetes.io\/name: agent/' \
    'PodMonitor selects no pods'
expect_error servicemonitor.yaml '/argus\/metrics: "true"/d' \
    'ServiceMonitor selects Services argus-collector-headless and argus-collector of the same pods'
# a document that is not YAML at all
rm -rf "$T/bad" && mkdir "$T/bad" && printf 'kind: [\n' >"$T/bad/x.yaml"
o=$("${CHECK[@]}" "$T/bad" 2>&1) && fail "broken YAML accepted: $o"
[[ $o == *"x.yaml: YAML:"* ]] || fail "broken YAML: $o"

# yamllint, as deploy_prometheus.sh does for the rules, when present
if command -v yamllint >/dev/null; then
    yamllint -d '{extends: relaxed, rules: {line-length: disable}}' "$K8S" || fail "yamllint deploy/k8s"
fi
echo "deploy k8s ok"
