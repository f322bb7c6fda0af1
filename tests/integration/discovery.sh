#!/usr/bin/env bash
# Rank discovery against the real /proc: processes with and without a rank
# environment, a bad RANK, a forked worker of a rank, a shell wrapper and a
# shell script (denied) around a rank, a rank in a chroot and one in its own
# mount namespace (container paths), an exec seen without an exec event, and
# a killed rank noticed by the next scan. Ends with scan timings
# (discovery_dump --bench).
#
#   ARGUS_DISCOVERY_LOAD=N  also start N idle processes first (timing on a busy node)
# test-cpu: all: scans every process on the machine and times the scans
set -u
cd "$(dirname "$0")/../.."
helpers=${ARGUS_BUILD:-$PWD/build}/tests/discovery
bin=$helpers/discovery_dump
[[ -x $bin && -x $helpers/jail ]] || { echo "skip: $helpers is not built (run make)"; exit 77; }

pids=() out="" fifo="" croot=""
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    [[ -n ${DUMP_PID:-} ]] && kill "$DUMP_PID" 2>/dev/null
    [[ -n $fifo ]] && rm -f "$fifo" "$fifo.train.sh"
    [[ -n $croot ]] && rm -rf "$croot"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; printf -- '--- last scan output:\n%s' "$out"; exit 1; }
start() { env -i PATH=/usr/bin:/bin "$@" & pids+=($!); }
wait_comm() { # pid, comm
    for _ in $(seq 300); do
        [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]] && return 0
        sleep 0.01
    done
    fail "pid $1 never became $2"
}
wait_child() { # parent pid -> prints its first child
    local c
    for _ in $(seq 300); do
        c=$(pgrep -P "$1" | head -n1) && [[ -n $c ]] && { echo "$c"; return 0; }
        sleep 0.01
    done
    return 1
}

for _ in $(seq "${ARGUS_DISCOVERY_LOAD:-0}"); do start sleep 60; done
start RANK=3 LOCAL_RANK=3 WORLD_SIZE=8 ARGUS_JOB=j1 ARGUS_TP_SIZE=2 sleep 30; r3=$!
start RANK=6 LOCAL_RANK=6 WORLD_SIZE=8 ARGUS_JOB=j1 ARGUS_TP_SIZE=2 sleep 30; r6=$!
start WORLD_SIZE=8 ARGUS_JOB=j1 sleep 30; plain=$!
start RANK=abc WORLD_SIZE=8 ARGUS_JOB=j1 sleep 30; bad=$!
start RANK=5 LOCAL_RANK=1 WORLD_SIZE=8 SLURM_JOB_ID=777 CUDA_VISIBLE_DEVICES=4,5 \
    bash -c 'sleep 30; true'; wrapper=$!
fifo=$(mktemp -u /tmp/argus-discovery-XXXXXX) && mkfifo "$fifo"
script=$fifo.train.sh # a script runs with comm "train.sh" but exe bash
printf '#!/bin/bash\nsleep 30\ntrue\n' >"$script" && chmod +x "$script"
start RANK=0 WORLD_SIZE=8 ARGUS_JOB=j1 "$script"; scripted=$!
start RANK=7 WORLD_SIZE=8 ARGUS_JOB=j1 bash -c "read x < $fifo; exec sleep 30"; execer=$!
py=""
if [[ -x /usr/bin/python3 ]]; then
    start RANK=4 WORLD_SIZE=8 ARGUS_JOB=j1 /usr/bin/python3 -c \
        'import os, time; os.fork(); time.sleep(30)'
    py=$!
fi
# sleep and its libraries in a directory of their own: run once chrooted (in
# our mount namespace) and once like a container (own namespace, pivot_root)
jailed="" boxed=""
if [[ $(id -u) == 0 ]] && command -v chroot >/dev/null && command -v ldd >/dev/null; then
    croot=$(mktemp -d /tmp/argus-discovery-root-XXXXXX)
    for f in /bin/sleep $(ldd /bin/sleep | grep -o '/[^ ]*'); do
        mkdir -p "$croot$(dirname "$f")" && cp "$f" "$croot$f"
    done
    start RANK=2 LOCAL_RANK=2 WORLD_SIZE=8 ARGUS_JOB=j1 "$(command -v chroot)" "$croot" /bin/sleep 30
    jailed=$!
    start RANK=1 LOCAL_RANK=1 WORLD_SIZE=8 ARGUS_JOB=j1 "$helpers/jail" "$croot" /bin/sleep 30
    boxed=$!
    wait_comm "$jailed" sleep
    wait_comm "$boxed" sleep
else
    echo "container check skipped: needs root, chroot and ldd"
fi
for p in $r3 $r6 $plain $bad; do wait_comm "$p" sleep; done
wrapped=$(wait_child "$wrapper") || fail "no sleep under the bash wrapper"
under_script=$(wait_child "$scripted") || fail "no sleep under the script"
pids+=("$wrapped" "$under_script")
wait_comm "$under_script" sleep
wait_comm "$wrapped" sleep
if [[ -n $py ]]; then
    worker=$(wait_child "$py") || fail "python never forked"
    pids+=("$worker")
fi

coproc DUMP { exec "$bin" --node itest; }
scan() {
    echo >&"${DUMP[1]}"
    out=""
    while IFS= read -r -t 10 -u "${DUMP[0]}" line; do
        out+="$line"$'\n'
        [[ $line == scan* ]] && return 0
    done
    fail "discovery_dump gave no scan line"
}
has() { grep -qE -- "$1" <<<"$out" || fail "missing: $1"; }
hasnt() { ! grep -qE -- "$1" <<<"$out" || fail "unexpected: $1"; }

scan
has "^new pid=$r3 job=j1 source=ARGUS_JOB rank=3 local_rank=3 world=8 tp=1/2 dp=1/4 pp=0/1 ep=0/1 gpu=3 comm=sleep container=0 root=/proc/$r3/root exe=/.*sleep"
has "^new pid=$r6 job=j1 source=ARGUS_JOB rank=6 local_rank=6 world=8 tp=0/2 dp=3/4 "
has "^new pid=$wrapped job=777 source=SLURM_JOB_ID rank=5 local_rank=1 .* gpu=5 comm=sleep "
has "^new pid=$under_script job=j1 source=ARGUS_JOB rank=0 .* comm=sleep "
hasnt "^new pid=($plain|$bad|$wrapper|$execer|$scripted) "
if [[ -n $py ]]; then
    has "^new pid=$py job=j1 source=ARGUS_JOB rank=4 .* comm=python3 "
    hasnt "^new pid=$worker "
fi
if [[ -n $jailed ]]; then
    # a chroot in our mount namespace: /proc shows host paths (a container in
    # its own namespace shows its own paths: the check after this one)
    has "^new pid=$jailed job=j1 source=ARGUS_JOB rank=2 .* container=1 root=/proc/$jailed/root exe=$croot/bin/sleep "
    lib=$(grep -o "^new pid=$jailed .* libc=[^ ]*" <<<"$out" | sed 's/.*libc=//')
    [[ $lib == "$croot"/* && -r $lib ]] || fail "libc of the chroot not resolved: $lib"
    cmp -s "$lib" "${lib#"$croot"}" || fail "$lib is not a copy of ${lib#"$croot"}"
    # own mount namespace: the container's paths, opened under its root
    has "^new pid=$boxed job=j1 source=ARGUS_JOB rank=1 .* container=1 root=/proc/$boxed/root exe=/bin/sleep libc=/proc/$boxed/root/"
    lib=$(grep -o "^new pid=$boxed .* libc=[^ ]*" <<<"$out" | sed 's/.*libc=//')
    [[ -r $lib ]] || fail "libc of the container not readable: $lib"
    cmp -s "$lib" "${lib#/proc/$boxed/root}" || fail "$lib is not a copy of ${lib#/proc/$boxed/root}"
fi
echo "first scan: $(grep "^scan" <<<"$out")"

# an exec without an exec event: the comm changes, the next scan reads it again
echo go >"$fifo"
wait_comm "$execer" sleep
scan
has "^new pid=$execer job=j1 source=ARGUS_JOB rank=7 .* comm=sleep "
[[ $(grep -c '^new' <<<"$out") == 1 ]] || fail "exec scan reported more than one change"

kill -9 "$r3"
wait "$r3" 2>/dev/null
scan
has "^exit pid=$r3 job=j1 rank=3$"
[[ $(grep -c '^exit\|^new' <<<"$out") == 1 ]] || fail "kill scan reported other changes"
echo "steady scan: $(grep "^scan" <<<"$out")"

"$bin" --bench 20 || fail "bench failed"
echo "discovery: all checks passed"
