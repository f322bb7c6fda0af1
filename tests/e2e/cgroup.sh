# shellcheck shell=bash
# A CPU quota on one process from outside it, through a cgroup (sourced by
# tests/e2e/demo.sh and demo_torch.sh). cgroup v2 (cpu.max) where its cpu
# controller is available, else the v1 cpu hierarchy (cpu.cfs_quota_us), as
# on hybrid hosts. Only what cg_create made is undone by cg_remove.
#
#   cg_find              sets CG_VER (2 or 1) and CG_ROOT, or returns 1 with CG_WHY
#   cg_create PCT        a new cgroup capped at PCT% of one CPU; sets CG_DIR
#   cg_add PID           moves PID (every thread) into it
#   cg_quota, cg_throttled   the quota and the throttling as the kernel reports them
#   cg_remove            moves what is left back to CG_ROOT, removes CG_DIR

CG_VER="" CG_ROOT="" CG_DIR="" CG_WHY="" CG_ENABLED_CPU=""

cg_find() {
    local m
    m=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
    if [[ -n $m ]] && grep -qw cpu "$m/cgroup.controllers" 2>/dev/null; then
        CG_VER=2 CG_ROOT=$m
        return 0
    fi
    m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
    if [[ -n $m && -w $m/cgroup.procs && -e $m/cpu.cfs_quota_us ]]; then
        CG_VER=1 CG_ROOT=$m
        return 0
    fi
    CG_WHY="no writable cgroup with the cpu controller (cgroup v2 cpu.max or v1 cpu.cfs_quota_us)"
    return 1
}

cg_create() {
    local pct=$1 quota period=100000
    quota=$((period * pct / 100))
    [[ -n $CG_ROOT ]] || cg_find || return 1
    if [[ $CG_VER == 2 ]] && ! grep -qw cpu "$CG_ROOT/cgroup.subtree_control"; then
        echo +cpu >"$CG_ROOT/cgroup.subtree_control" || {
            CG_WHY="cannot enable the cpu controller in $CG_ROOT"
            return 1
        }
        CG_ENABLED_CPU=1
    fi
    CG_DIR=$CG_ROOT/argus-demo.$$
    mkdir "$CG_DIR" || { CG_WHY="cannot create $CG_DIR"; CG_DIR=""; return 1; }
    if [[ $CG_VER == 2 ]]; then
        echo "$quota $period" >"$CG_DIR/cpu.max"
    else
        echo "$period" >"$CG_DIR/cpu.cfs_period_us" && echo "$quota" >"$CG_DIR/cpu.cfs_quota_us"
    fi
}

cg_add() { echo "$1" >"$CG_DIR/cgroup.procs"; }

# How often and how long the kernel throttled the cgroup: "N times, S s".
cg_throttled() {
    awk '$1 == "nr_throttled" {n = $2} $1 == "throttled_usec" {s = $2 / 1e6}
         $1 == "throttled_time" {s = $2 / 1e9} END {printf "%d times, %.1f s", n, s}' "$CG_DIR/cpu.stat"
}

# The quota as the kernel reads it back, e.g. "20000 100000".
cg_quota() {
    if [[ $CG_VER == 2 ]]; then
        cat "$CG_DIR/cpu.max"
    else
        echo "$(cat "$CG_DIR/cpu.cfs_quota_us") $(cat "$CG_DIR/cpu.cfs_period_us")"
    fi
}

cg_remove() {
    [[ -n $CG_DIR && -d $CG_DIR ]] || return 0
    local p
    for _ in $(seq 50); do
        for p in $(cat "$CG_DIR/cgroup.procs" 2>/dev/null); do
            echo "$p" >"$CG_ROOT/cgroup.procs" 2>/dev/null || true
        done
        rmdir "$CG_DIR" 2>/dev/null && break
        sleep 0.1
    done
    [[ ! -d $CG_DIR ]] || echo "demo: could not remove $CG_DIR" >&2
    if [[ -n $CG_ENABLED_CPU ]]; then
        echo -cpu >"$CG_ROOT/cgroup.subtree_control" 2>/dev/null || true
    fi
    CG_DIR=""
}
