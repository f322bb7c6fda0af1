# Shared by tests/integration/bpf_*.sh (sourced from the repository root).
BPF_BUILD=${ARGUS_BUILD:-$PWD/build}
BPF_DRIVER=$BPF_BUILD/tests/bpf/probe_driver
BPF_WORKLOAD=$BPF_BUILD/tests/bpf/workload

bpf_skip() { echo "skip: $*"; exit 77; }

bpf_require_root() {
    [[ $(id -u) == 0 ]] || bpf_skip "not root (BPF needs CAP_BPF and CAP_PERFMON)"
    [[ -r /sys/kernel/btf/vmlinux ]] || bpf_skip "no kernel BTF"
    [[ -x $BPF_DRIVER && -x $BPF_WORKLOAD ]] || { echo "not built: $BPF_DRIVER"; exit 1; }
}

# bpf_run PROBE OUTDIR WORKLOAD-ARGS...: start the workload (it waits for the
# go file), run the driver on its pid until it exits. Leaves OUTDIR/wl.out
# and OUTDIR/drv.out.
bpf_run() {
    local probe=$1 out=$2; shift 2
    rm -f "$out/go"
    ARGUS_GO=$out/go "$BPF_WORKLOAD" "$@" >"$out/wl.out" 2>&1 &
    local wl=$!
    timeout 60 "$BPF_DRIVER" "$probe" --pid "$wl" --ready "$out/go" ${BPF_DRIVER_ARGS:-} >"$out/drv.out" 2>&1
    local rc=$?
    [[ $rc == 0 ]] || kill "$wl" 2>/dev/null # it may still wait for the go file
    wait "$wl"
    [[ $rc == 77 ]] && { cat "$out/drv.out"; exit 77; }
    [[ $rc == 0 ]] || { cat "$out/drv.out"; echo "driver failed ($rc)"; exit 1; }
}

# Sum of the values of COUNTER events with counter=C (and tid=T if given).
bpf_counter_sum() {
    awk -v c="$2" -v t="${3:-}" '$1=="EV" && $2=="kind=COUNTER" {
        ok=0; v=0; tid=""
        for (i=3;i<=NF;i++) { split($i,a,"="); if (a[1]=="counter" && a[2]==c) ok=1;
            if (a[1]=="value") v=a[2]; if (a[1]=="tid") tid=a[2] }
        if (ok && (t=="" || t==tid)) s+=v } END { printf "%d\n", s }' "$1"
}

# Fail with a message unless the awk condition holds.
bpf_check() { # message, condition (shell)
    if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; BPF_FAILED=1; fi
}
