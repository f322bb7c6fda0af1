#!/usr/bin/env bash
# Collector memory under hostile load (issue 15): peak and current RSS
# (VmHWM, VmRSS) at start, after four batches declaring world_size 65,536 for
# new jobs, after two of rank 65,535, and after a flood of 10,000 new jobs
# (one batch each, one rank, one step), sent by tests/limits/limits_flood.
#   tests/bench/bench_limits.sh [COLLECTOR_BINARY] [collector flags...]
# e.g. ARGUS_BUILD=build tests/bench/bench_limits.sh "" --limits.max_jobs 100000
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=${ARGUS_BUILD:-$REPO/build}
export ARGUS_GRPC_PLAINTEXT=true # argusctl: the bench's collector is plaintext on loopback
BIN=${1:-$B/bin/argus-collector}
shift || true
FLOOD=$B/tests/limits/limits_flood
[[ -x $BIN && -x $FLOOD ]] || { echo "build first: make all"; exit 1; }
D=$(mktemp -d /tmp/argus-bench-limits.XXXXXX)
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" "$@" --grpc.listen "127.0.0.1:$P" --grpc.plaintext true --http.listen "" --store.dir "$D/store" >"$D/log" 2>&1 &
C=$!
trap 'kill $C 2>/dev/null; wait; rm -rf "$D"' EXIT
for _ in $(seq 100); do "$B/bin/argusctl" --collector "127.0.0.1:$P" --timeout 1s jobs \
    >/dev/null 2>&1 && break; sleep 0.1; done
rss() { awk '/VmHWM|VmRSS/ {printf "%s %d MiB  ", $1, $2 / 1024}' "/proc/$C/status"; }
echo "start: $(rss)"
"$FLOOD" --collector "127.0.0.1:$P" --jobs 4 --world 65536 --prefix world- --agent w
sleep 3
echo "after 4 batches declaring world_size 65536: $(rss)"
"$FLOOD" --collector "127.0.0.1:$P" --jobs 2 --world 65536 --rank 65535 --prefix high- --agent h
sleep 3
echo "after 2 batches of rank 65535: $(rss)"
"$FLOOD" --collector "127.0.0.1:$P" --jobs 10000 --prefix flood- --agent f
sleep 3
echo "after a flood of 10,000 new jobs: $(rss)"
