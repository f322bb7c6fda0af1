/* libFuzzer target: the decoders of the records the BPF programs write
 * (agent/probes/: collectives and sync call records, marker records, whose
 * names a traced process chose, process events, scheduler and counter
 * accumulators, the thread ends held for their free). The input is a sequence of {selector byte,
 * record bytes}; each record is decoded by the decoder the selector names. Decoders must never read
 * past a record or crash on any field value. */
#include <stdlib.h>
#include <string.h>

#include "agent/probes/probe_collectives.h"
#include "agent/probes/probe_common.h"
#include "agent/probes/probe_marker.h"
#include "agent/probes/probe_proc.h"
#include "agent/probes/probe_sched.h"
#include "agent/probes/probe_sync.h"
#include "agent/probes/sched_ends.h"
#include "bpf/calls.h"
#include "bpf/marker.h"
#include "bpf/proc.h"
#include "bpf/sched.h"
#include "fuzz_util.h"

/* Copy the next n bytes of input into rec (zero-padded when short). */
static size_t take(void *rec, size_t n, const uint8_t *data, size_t size)
{
    size_t k = size < n ? size : n;

    memset(rec, 0, n);
    memcpy(rec, data, k);
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    while (size > 0) {
        uint8_t sel = data[0];
        size_t used = 0;

        data++, size--;
        switch (sel % 5) {
        case 0: {
            struct argus_call_record r;
            struct probe_collectives_call c;
            struct probe_sync_call s;
            used = take(&r, sizeof(r), data, size);
            if (probe_collectives_decode(&r, &c) == 0 && !c.name)
                abort();
            (void)probe_sync_decode(&r, &s);
            break;
        }
        case 1: {
            struct argus_marker_record r;
            struct agent_event ev;
            const char *name = NULL;
            used = take(&r, sizeof(r), data, size);
            if (probe_marker_decode(&r, &ev, &name) == 0 && name &&
                !memchr(name, 0, sizeof(r.name) + 1))
                abort();
            break;
        }
        case 2: {
            struct argus_proc_event r;
            struct agent_event ev;
            used = take(&r, sizeof(r), data, size);
            (void)probe_proc_decode(&r, &ev);
            break;
        }
        case 3: {
            struct argus_sched_delta d;
            struct agent_event out[2];
            struct sched_ends ends = {0};
            struct argus_sched_delta r;
            used = take(&d, sizeof(d), data, size);
            if (probe_sched_decode(&d, d.off_cpu_ns, out) > 2)
                abort();
            /* an end reported once: now, or when its wait is over */
            int k = sched_ends_add(&ends, &d, 0, &r);
            if (k == 0 && d.kind == ARGUS_SCHED_EXIT &&
                (sched_ends_expire(&ends, SCHED_ENDS_WAIT_NS, &r) != 1 || r.tid != d.tid ||
                 sched_ends_held(&ends) != 0))
                abort();
            if ((k == 1) != (d.kind == ARGUS_SCHED_FREE) && k >= 0)
                abort();
            sched_ends_free(&ends);
            break;
        }
        default: {
            uint64_t v[3];
            struct agent_event ev;
            used = take(v, sizeof(v), data, size);
            (void)probe_counter_decode((uint32_t)v[2], v[0], v[1], (uint32_t)(v[2] >> 32), v[2],
                                       &ev);
            break;
        }
        }
        data += used, size -= used;
    }
    return 0;
}
