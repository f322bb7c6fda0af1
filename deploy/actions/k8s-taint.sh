#!/bin/sh
# An argus action hook for Kubernetes (actions.rules = "compute:/etc/argus/actions/k8s-taint.sh,...").
# Same contract as slurm-drain.sh: ARGUS_ACTION drain | undo, ARGUS_NODE,
# ARGUS_CAUSE, ARGUS_JOB, ARGUS_REPORT_ID, ARGUS_ACTION_ID in the environment,
# the report JSON on stdin; exit 0 when done. Drain taints the node NoSchedule
# (pods running there stay; new ones go elsewhere unless they tolerate
# argus/straggler); undo removes the taint. The collector's service account
# (or KUBECONFIG) needs "patch" on nodes.
set -eu
: "${ARGUS_NODE:?no ARGUS_NODE}"
case "${ARGUS_ACTION:-}" in
drain)
    exec kubectl taint nodes "$ARGUS_NODE" --overwrite \
        "argus/straggler=${ARGUS_CAUSE:-unknown}:NoSchedule"
    ;;
undo)
    exec kubectl taint nodes "$ARGUS_NODE" "argus/straggler:NoSchedule-"
    ;;
*)
    echo "k8s-taint.sh: ARGUS_ACTION must be drain or undo, not '${ARGUS_ACTION:-}'" >&2
    exit 2
    ;;
esac
