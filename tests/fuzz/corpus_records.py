#!/usr/bin/python3
"""Seeds for fuzz_cupti and fuzz_bpf_records (run by make_corpus.sh): records
laid out byte for byte as agent/cupti/ring.h and bpf/*.h define them, with
the values a real job writes (an all-reduce call, a forward phase marker, a
step of kernels with their launches and names)."""
import os
import struct
import sys

out = sys.argv[1]


def put(target, name, data):
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


# --- BPF records: {selector, record} ----------------------------------------
call = struct.pack("<QQQ8QqII", 1_000_000, 1_250_000, 0,
                   0x7f00_0000_1000, 0x7f00_0000_2000, 1 << 20, 7, 0, 0xC0FFEE, 0x5555, 0,
                   0, 4242, 4243)                              # ncclAllReduce, float, 1M
sync = struct.pack("<QQQ8QqII", 2_000_000, 2_900_000, 1, 0x5555, 0, 0, 0, 0, 0, 0, 0, 0, 4242, 4243)
name = b"forward"
marker = struct.pack("<QQIIIi64s", 3_000_000, 17, 2, 4242, 4243, len(name) + 1, name)
step = struct.pack("<QQIIIi64s", 3_000_000, 18, 1, 4242, 4243, 0, b"")
proc = struct.pack("<QIIIi16s", 4_000_000, 1, 4242, 1, 0, b"python3")
# argus_sched_delta: off-CPU, run queue, tgid, tid, kind (a thread's exit), reserved
sched = struct.pack("<QQIIII", 9_000_000, 4_000_000, 4242, 4243, 1, 0)
counter = struct.pack("<QQQ", 1 << 30, 1 << 29, 3)
put("fuzz_bpf_records", "collective", b"\0" + call)
put("fuzz_bpf_records", "sync", b"\0" + sync)
put("fuzz_bpf_records", "marker", b"\1" + step + b"\1" + marker)
put("fuzz_bpf_records", "proc", b"\2" + proc)
put("fuzz_bpf_records", "sched", b"\3" + sched)
put("fuzz_bpf_records", "counter", b"\4" + counter)
put("fuzz_bpf_records", "mixed", b"\1" + marker + b"\0" + call + b"\3" + sched + b"\2" + proc)

# --- CUPTI ring: selector, head, tail, 40-byte spans --------------------------
KERNEL, MEMCPY, MEMSET, API, MARKER, STEP, NAME, RANGE_END = range(1, 9)
SAMPLED, NUMBERED, PHASE = 1, 2, 4


def span(start, dur, name_id, corr, stream, kind, flags, aux):
    return struct.pack("<QQQIIHHI", start, dur, name_id, corr, stream, kind, flags, aux)


def name_slots(name_id, text):
    b = text.encode()
    pad = (-len(b)) % 40
    return span(0, 0, name_id, 0, 0, NAME, 0, len(b)) + b + b"\0" * pad


spans = b"".join([
    name_slots(11, "ProfilerStep#7"),
    name_slots(12, "ampere_sgemm_128x64_nn"),
    span(1000, 0, 11, 0, 77, STEP, SAMPLED | NUMBERED, 7),
    span(1000, 0, 12, 0, 77, MARKER, PHASE, 1),
    span(1100, 50, 0, 501, 77, API, 0, 0),
    span(1200, 400, 12, 501, 7, KERNEL, 0, 0),
    span(1700, 30, 13, 502, 7, MEMCPY, 0, 0),
    span(1800, 0, 0, 0, 77, RANGE_END, 0, 1),
])
nslots = len(spans) // 40
slots_log2 = max(1, (nslots - 1).bit_length())      # ring of 2^k >= nslots slots
sel = (slots_log2 & 7) << 1
put("fuzz_cupti", "step", bytes([sel]) + struct.pack("<QQ", nslots, 0) + spans)
wrap = struct.pack("<QQ", (1 << 40) + nslots, 1 << 40)  # counters far along, same spans
put("fuzz_cupti", "wrapped", bytes([sel]) + wrap + spans)
put("fuzz_cupti", "empty", bytes([2]) + struct.pack("<QQ", 0, 0))
