/* BPF side only: batched ring-buffer wakeups. Waking the consumer on every
 * record costs the traced process a context switch per event (measured: a
 * 4.4% step-time overhead on 8 ranks); instead records are submitted
 * without a wakeup until the ring is a quarter full, and user space also
 * reads the ring on a 100 ms timer (agent/probes/probe_common.h, probe_wakeup). */
#ifndef ARGUS_BPF_RING_H
#define ARGUS_BPF_RING_H

static __always_inline __u64 argus_ring_wakeup(void *ring, __u64 ring_bytes)
{
    return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > ring_bytes / 4 ? BPF_RB_FORCE_WAKEUP
                                                                       : BPF_RB_NO_WAKEUP;
}

#endif
