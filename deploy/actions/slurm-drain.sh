#!/bin/sh
# An argus action hook for Slurm (actions.rules = "compute:/etc/argus/actions/slurm-drain.sh,...").
# The collector runs it without a shell, with the report (drain) or the action
# record (undo) as JSON on stdin and, in the environment:
#   ARGUS_ACTION  drain | undo      ARGUS_NODE       the node to act on
#   ARGUS_CAUSE   compute, link...  ARGUS_JOB, ARGUS_REPORT_ID, ARGUS_ACTION_ID, ARGUS_SUMMARY
# Exit 0 when done; anything else is recorded as failed (a drain is then tried
# again at the next report). Its output (first 512 bytes) is recorded.
# Drain keeps running jobs and takes no new ones; undo (argusctl actions undo
# ID, only for a drain argus did) resumes the node.
set -eu
: "${ARGUS_NODE:?no ARGUS_NODE}"
case "${ARGUS_ACTION:-}" in
drain)
    exec scontrol update NodeName="$ARGUS_NODE" State=DRAIN \
        Reason="argus: ${ARGUS_CAUSE:-?} straggler, report ${ARGUS_REPORT_ID:-?} (action ${ARGUS_ACTION_ID:-?})"
    ;;
undo)
    exec scontrol update NodeName="$ARGUS_NODE" State=RESUME
    ;;
*)
    echo "slurm-drain.sh: ARGUS_ACTION must be drain or undo, not '${ARGUS_ACTION:-}'" >&2
    exit 2
    ;;
esac
