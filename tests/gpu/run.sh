#!/usr/bin/env bash
# GPU check for libargus-cupti.so: one command for a GPU machine with CUDA,
# nvcc and PyTorch but no network.
#
#   tests/gpu/run.sh [STEPS]        (default 300 steps; a few minutes at most)
#
# 0. reads NVML (agent/hw/nvml.c) through tests/gpu/nvml_read.c: per GPU
#    its UUID, clock-event reasons, SM clock, temperature, violation times
#    over a second, ECC, remapped rows, PCIe replays, NVLink errors and
#    XIDs (ARGUS_NVML_LIB=... reads another library, e.g. the test double);
#    fails the check only when NVML is there and the read fails;
# 1. builds the injection library and the small agent driver (make, or a
#    direct gcc line when the build dependencies are missing there);
# 2. runs a small launch-heavy PyTorch training loop on the GPU for STEPS
#    steps without the library, then with CUDA_INJECTION64_PATH (always-on),
#    then with sampling 1 of every 4 steps;
# 3. prints the step-time ratio, records captured, records dropped and the
#    GPU phase times seen (NVTX step/forward/backward/optimizer).
# Without a GPU it does what it can (build, CUPTI and PyTorch lookups), says
# so and exits 77.
set -u
cd "$(dirname "$0")/../.."
STEPS=${1:-300}
CUDA=${CUDA:-/usr/local/cuda}
OUT=${OUT:-/tmp/argus-gpu-check.$$}
mkdir -p "$OUT"
say() { printf 'gpu-check: %s\n' "$*"; }

# --- NVML ------------------------------------------------------------------
nvml_read() {
    local bin=$PWD/build/tests/nvml/nvml-read rc
    if ! make -j"$(nproc)" build/tests/nvml/nvml-read >"$OUT/make-nvml.log" 2>&1; then
        bin=$OUT/nvml-read
        gcc -std=gnu11 -O2 -I. tests/gpu/nvml_read.c agent/hw/nvml.c -ldl -o "$bin" \
            >>"$OUT/make-nvml.log" 2>&1 ||
            { say "FAIL: cannot build nvml-read (see $OUT/make-nvml.log)"; return 1; }
    fi
    "$bin" ${ARGUS_NVML_LIB:+"$ARGUS_NVML_LIB"} >"$OUT/nvml-read.out" 2>&1
    rc=$?
    while IFS= read -r line; do say "nvml: $line"; done <"$OUT/nvml-read.out"
    case $rc in
    0) say "nvml: read" ;;
    77) say "nvml: skip (no NVML here)" ;;
    *) say "FAIL: nvml-read exited $rc with NVML present"; return 1 ;;
    esac
}
nvml_read || exit 1

# --- build ---------------------------------------------------------------
build() {
    if make -j"$(nproc)" build/lib/libargus-cupti.so build/tests/cupti/cupti-agent \
        >"$OUT/make.log" 2>&1; then
        LIB=$PWD/build/lib/libargus-cupti.so AGENT=$PWD/build/tests/cupti/cupti-agent
        say "built with make"
        return 0
    fi
    say "make failed (see $OUT/make.log), building with gcc directly"
    mkdir -p "$OUT/bin"
    gcc -std=gnu11 -O2 -fPIC -shared -fvisibility=hidden -pthread -I. -I"$CUDA/include" \
        agent/cupti/*.c -o "$OUT/bin/libargus-cupti.so" -ldl -lm || return 1
    gcc -std=gnu11 -O2 -pthread -I. tests/cupti/agent_driver.c agent/sources/source_cupti.c agent/sources/source_cupti_proj.c \
        common/clock.c -o "$OUT/bin/cupti-agent" || return 1
    LIB=$OUT/bin/libargus-cupti.so AGENT=$OUT/bin/cupti-agent
}
if [[ ! -f $CUDA/include/cupti.h ]]; then
    say "skip: no CUPTI headers at $CUDA/include (set CUDA=...)"
    exit 77
fi
build || { say "FAIL: cannot build the library"; exit 1; }
nm -D --defined-only "$LIB" | grep -q ' InitializeInjection$' ||
    { say "FAIL: $LIB does not export InitializeInjection"; exit 1; }
say "library $LIB (NEEDED: $(readelf -d "$LIB" | awk '/NEEDED/{printf "%s ", $5}'))"

# --- CUPTI and PyTorch ---------------------------------------------------
CUPTI=${ARGUS_CUPTI_LIB:-}
if [[ -z $CUPTI ]]; then
    for c in "$CUDA"/lib64/libcupti.so.13 "$CUDA"/extras/CUPTI/lib64/libcupti.so.13 \
        $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null \
            | xargs -r -I{} find {} -name 'libcupti.so*' 2>/dev/null); do
        [[ -e $c ]] && { CUPTI=$c; break; }
    done
fi
say "CUPTI: ${CUPTI:-not found (the library will try its default names)}"
PY=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' 2>/dev/null; then PY=$p; break; fi
done
if [[ -z $PY ]]; then
    say "skip: no python with PyTorch here (set PYTHON=...)"
    exit 77
fi
say "python $PY, torch $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)')"

# --- the training loop ---------------------------------------------------
cat >"$OUT/train.py" <<'EOF'
# Launch-heavy loop: many small layers, so kernel launches dominate.
import os, sys, time, statistics, torch
steps = int(sys.argv[1]); dry = os.environ.get("ARGUS_GPU_DRYRUN") == "1"
warm = 1 if dry else 20
torch.manual_seed(0)
dev = torch.device("cpu" if dry else "cuda")
layers = []
for _ in range(48):
    layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
model = torch.nn.Sequential(*layers).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device=dev); y = torch.randn(64, 256, device=dev)
class NoNvtx:
    range_push = range_pop = staticmethod(lambda *a: None)
nvtx = NoNvtx if dry else torch.cuda.nvtx
sync = (lambda: None) if dry else torch.cuda.synchronize
times = []
for i in range(steps + warm):
    sync(); t0 = time.perf_counter()
    nvtx.range_push("step")
    nvtx.range_push("forward"); loss = torch.nn.functional.mse_loss(model(x), y); nvtx.range_pop()
    nvtx.range_push("backward"); opt.zero_grad(set_to_none=True); loss.backward(); nvtx.range_pop()
    nvtx.range_push("optimizer"); opt.step(); nvtx.range_pop()
    nvtx.range_pop()
    sync()
    if i >= warm: times.append(time.perf_counter() - t0)
print("median_step_ms %.4f mean_step_ms %.4f" % (statistics.median(times) * 1e3,
      statistics.mean(times) * 1e3))
EOF

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1 ||
    ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    # dry run: the loop itself, on the CPU, a few steps
    if ARGUS_GPU_DRYRUN=1 "$PY" "$OUT/train.py" 3 >"$OUT/dry.out" 2>&1; then
        say "dry run of the training loop on the CPU: $(cat "$OUT/dry.out")"
    else
        say "FAIL: the training loop does not run"; cat "$OUT/dry.out"; exit 1
    fi
    say "skip: no GPU (nvidia-smi missing or lists no device, or torch sees no CUDA);" \
        "build, lookups and the loop's dry run done"
    exit 77
fi
nvidia-smi -L | sed 's/^/gpu-check: /'

run_train() { # label, extra env...
    local label=$1; shift
    env "$@" timeout 300 "$PY" "$OUT/train.py" "$STEPS" >"$OUT/$label.out" 2>"$OUT/$label.err" ||
        { say "FAIL: training ($label), see $OUT/$label.err" >&2; tail -5 "$OUT/$label.err" >&2; return 1; }
    awk '/median_step_ms/{print $2}' "$OUT/$label.out"
}

traced() { # label, agent extra args...
    local label=$1; shift
    local sock=$OUT/$label.sock
    "$AGENT" "$sock" 400 -x 1 "$@" >"$OUT/$label.agent" 2>&1 &
    local apid=$!
    sleep 0.5
    local ms
    ms=$(run_train "$label" RANK=0 LOCAL_RANK=0 CUDA_INJECTION64_PATH="$LIB" \
        ARGUS_AGENT_SOCKET="$sock" ${CUPTI:+ARGUS_CUPTI_LIB=$CUPTI NVTX_INJECTION64_PATH=$CUPTI})
    for _ in $(seq 50); do kill -0 $apid 2>/dev/null || break; sleep 0.1; done
    kill $apid 2>/dev/null; wait $apid 2>/dev/null
    grep -h 'argus-cupti' "$OUT/$label.err" | sed 's/^/gpu-check: library says: /' >&2
    echo "$ms"
}

report() { # label, base_ms, ms
    local f=$OUT/$1.agent
    local sum; sum=$(grep '^summary' "$f")
    say "$1: median step $3 ms vs $2 ms untraced, ratio $(awk -v a="$3" -v b="$2" 'BEGIN{printf "%.4f", a/b}')"
    say "$1: $sum"
    say "$1: records captured $(grep -c '^K ' "$f"), dropped $(echo "$sum" |
        awk '{for(i=1;i<=NF;i++){split($i,kv,"="); if(kv[1]~/no_buffer|ring_full|no_agent/) d+=kv[2]} print d+0}')"
    awk '/^P /{k=$5; for(i=6;i<=NF;i++) k=k" "$i; n[k]++; t[k]+=$4} END{for(k in n) printf "gpu-check: '"$1"': phase %-10s %5d seen, mean GPU time %.3f ms\n", k, n[k], t[k]/n[k]/1e6}' "$f"
}

say "running $STEPS steps untraced"
base=$(run_train base)
say "running $STEPS steps traced (always on)"
always=$(traced always | tail -1)
say "running $STEPS steps traced (sampling 1 of every 4 steps)"
sampled=$(traced sampled -s 1 1 4 | tail -1)
if [[ -z $base || -z $always || -z $sampled ]]; then
    say "FAIL: a training run gave no step time (outputs in $OUT)"
    exit 1
fi
report always "$base" "$always"
report sampled "$base" "$sampled"
say "outputs in $OUT"
