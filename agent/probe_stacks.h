/* The `stacks` probe: CPU stack sampling of tracked ranks on a perf event
 * (PERF_COUNT_SW_CPU_CLOCK on every CPU, default 19 Hz, at most 99 Hz),
 * kernel and user stacks into a BPF stack map, symbolized in user space
 * (agent/symcache.h) and kept as a bounded window of samples. It emits no
 * events: the agent asks probe_stacks_top_frames() for a rank's top frames
 * over a step's time window. */
#ifndef ARGUS_AGENT_PROBE_STACKS_H
#define ARGUS_AGENT_PROBE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/source.h"

#define PROBE_STACKS_DEFAULT_HZ 19
#define PROBE_STACKS_MAX_HZ 99
#define PROBE_STACKS_FRAMES 24 /* frames kept per sample, leaf first */

struct probe_stacks_config {
    uint32_t frequency_hz; /* 0 = default; clamped to PROBE_STACKS_MAX_HZ */
    uint32_t window;       /* samples kept (ring); 0 = 16384 */
};

/* One symbolized sample: frames[0] is the leaf; ids index the probe's name
 * table (kernel frames first when the sample was taken in the kernel). */
struct probe_stacks_sample {
    uint64_t ts_ns;
    uint32_t pid;
    uint32_t nframes;
    uint32_t frames[PROBE_STACKS_FRAMES];
};

/* A frame in a window: self = samples where it is the leaf, total = samples
 * where it appears at all (counted once per sample). */
struct probe_stacks_frame {
    char name[128];
    uint64_t self;
    uint64_t total;
};

/* Aggregate samples of pid with from_ns <= ts < to_ns (pure): count per
 * frame id into self[]/total[] (nnames entries each, zeroed by the caller).
 * Returns the number of samples that matched. */
size_t probe_stacks_aggregate(const struct probe_stacks_sample *samples, size_t n, uint32_t pid,
                              uint64_t from_ns, uint64_t to_ns, uint64_t *self, uint64_t *total,
                              size_t nnames);

/* The top `max` frames of pid in [from_ns, to_ns), by self then total
 * count, into out. state is the probe's (from create). Returns how many. */
size_t probe_stacks_top_frames(void *state, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                               struct probe_stacks_frame *out, size_t max);

extern const struct source_ops probe_stacks_ops;

#endif
