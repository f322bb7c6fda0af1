#!/usr/bin/env bash
# make demo: argus end to end. As root on a machine with python3-torch, BTF
# and a cgroup with the cpu controller, on a real PyTorch DDP job with one
# rank's CPU capped from outside (tests/e2e/demo_torch.sh); otherwise it says
# why and runs the simulator demo (tests/e2e/demo_sim.sh: a 256-rank job
# streamed over the real protocol). ARGUS_DEMO=torch or sim picks one; a
# forced torch demo that cannot run here fails instead. Exits 0 when argus
# named the straggler.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source tests/e2e/cgroup.sh
mode=${ARGUS_DEMO:-auto}
case $mode in
auto | torch | sim) ;;
*) echo "demo: ARGUS_DEMO must be auto, torch or sim, not '$mode'" >&2; exit 2 ;;
esac

why=""
if [[ $mode != sim ]]; then
    if [[ $(id -u) != 0 ]]; then
        why="not root (the agent's eBPF probes and the CPU quota need root)"
    elif ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
        why="/usr/bin/python3 cannot import torch (Debian: apt-get install python3-torch)"
    elif [[ ! -r /sys/kernel/btf/vmlinux ]]; then
        why="the kernel has no BTF (/sys/kernel/btf/vmlinux) for the agent's eBPF probes"
    elif ! cg_find; then
        why=$CG_WHY
    fi
    if [[ -z $why ]]; then
        exec tests/e2e/demo_torch.sh
    fi
    if [[ $mode == torch ]]; then
        echo "demo: cannot run on a real PyTorch job: $why" >&2
        exit 1
    fi
    echo "== no demo on a real PyTorch job here: $why"
    echo "== running the simulator demo instead"
    echo
fi
exec tests/e2e/demo_sim.sh
