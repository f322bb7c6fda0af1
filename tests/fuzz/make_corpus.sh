#!/usr/bin/env bash
# Regenerate the committed seed corpora (tests/fuzz/corpus/<target>/) from
# real inputs. Run after `make all fuzz-build`; commit what changes.
#   records         argus-sim --record files (healthy and a straggler)
#   spool           segments a real agent spooled while its collector was down
#   frame           the frames in those segments (what the agent sends)
#   batch,
#   wire_steps      their payloads (packed Batches), via fuzz_frame's dump hook
#   config          deploy/config/*.conf
#   kineto          the real traces of ../shared/data/kineto/, cut to their
#                   distributedInfo and first events of each kind
#   symbolize       small ELF objects we build (marker library, test workload)
#   cupti,
#   bpf_records     records laid out as the agent's readers expect them
#                   (tests/fuzz/corpus_records.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build/bin
C=tests/fuzz/corpus
T=$(mktemp -d)
AGENT=
cleanup() { [[ -n $AGENT ]] && kill "$AGENT" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
rm -rf "$C" && mkdir -p "$C"
for t in records spool frame batch wire_steps config kineto symbolize cupti bpf_records; do
    mkdir -p "$C/fuzz_$t"
done

"$B/argus-sim" --job seed --ranks 2 --ranks_per_node 2 --steps 3 --record "$C/fuzz_records/healthy" >/dev/null
"$B/argus-sim" --job seed --ranks 8 --ranks_per_node 4 --steps 12 --scenario compute-straggler \
    --record "$T/straggler" >/dev/null
head -c 12000 "$T/straggler" >"$C/fuzz_records/straggler-cut"

# a real agent replaying the straggler records into a spool (no collector)
"$B/argus-agent" --collector.address 127.0.0.1:1 --grpc.plaintext true --spool.dir "$T/spool" --spool.segment 16KiB \
    --http.listen 127.0.0.1:0 --node.name seednode --cupti.socket "$T/cupti.sock" \
    --probes.enable "" --replay.records "$T/straggler" --replay.rate 50 --batch.max_age 50ms \
    >"$T/agent.log" 2>&1 &
AGENT=$!
sleep 3
kill "$AGENT"; wait "$AGENT" 2>/dev/null || true; AGENT=
/usr/bin/python3 - "$T/spool" "$C" <<'PY'
import os, struct, sys
spool, corpus = sys.argv[1], sys.argv[2]
segs = sorted(f for f in os.listdir(spool) if f.startswith("seg-"))
assert segs, "the agent spooled nothing"
n = 0
for s in segs:
    data = open(os.path.join(spool, s), "rb").read()
    off, end = 0, 0
    while off + 20 <= len(data):
        magic, ln, seq, crc = struct.unpack_from("<IIQI", data, off)
        if magic != 0x31525341 or off + 20 + ln > len(data):
            break
        frame = data[off + 20:off + 20 + ln]
        open(os.path.join(corpus, "fuzz_frame", "seg%s-%d" % (s[4:12], seq)), "wb").write(frame)
        n += 1
        off = end = off + 20 + ln
    open(os.path.join(corpus, "fuzz_spool", s), "wb").write(data[:end])
print("spool: %d segments, %d frames" % (len(segs), n))
PY
FUZZ_DUMP_DIR="$C/fuzz_batch" build/fuzz/fuzz_frame -runs=0 "$C/fuzz_frame" >/dev/null 2>&1
cp "$C"/fuzz_batch/* "$C/fuzz_wire_steps/"
cp deploy/config/*.conf "$C/fuzz_config/"
printf '[log]\nlevel = debug\n[grpc]\nlisten = 127.0.0.1:7700\n' >"$C/fuzz_config/small.conf"
cp build/lib/libargus-marker.so "$C/fuzz_symbolize/"
printf '7f0000001000 40 ncclAllReduce\n7f0000002000 100 [jit] step_fn\n' >"$C/fuzz_symbolize/perf.map"

/usr/bin/python3 - "$C/fuzz_kineto" ../shared/data/kineto/*.json.gz <<'PY'
import gzip, json, os, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    t = json.load(gzip.open(path))
    keep, seen = [], {}
    for e in t.get("traceEvents", []):
        k = (e.get("cat"), e.get("ph"))
        if seen.get(k, 0) < 12:
            seen[k] = seen.get(k, 0) + 1
            keep.append(e)
    small = {k: v for k, v in t.items() if k != "traceEvents"}
    small["traceEvents"] = keep
    name = os.path.basename(path).replace(".json.gz", ".json")
    open(os.path.join(out, name), "w").write(json.dumps(small))
PY
/usr/bin/python3 tests/fuzz/corpus_records.py "$C"
for d in "$C"/*; do echo "$(basename "$d"): $(ls "$d" | wc -l) seeds, $(du -sk "$d" | cut -f1) KiB"; done
