/* The `stacks` probe: CPU stack sampling of tracked ranks on a perf event
 * (PERF_COUNT_SW_CPU_CLOCK on every CPU, default 19 Hz, at most 99 Hz),
 * kernel and user stacks into a BPF stack map. It emits no events (but drop
 * counts): the agent asks probe_stacks_top_frames() for a rank's top frames
 * over a step's time window.
 *
 * The main loop never symbolizes. The ring callback only copies a sample's
 * addresses out of the stack map (two map lookups) and hands them to the
 * symbolizer thread (agent/probes/stacks_worker.h), which names the frames through
 * a symbol cache shared by all processes (agent/symbols/symcache.h: a library is
 * read once for every rank mapping it). Named samples come back in order
 * and go into a bounded window of samples, which the queries read.
 *
 * A sample is in exactly one of these states, and each is counted:
 *   - dropped: the BPF ring was full (reason stacks_ring_full) or too many
 *     samples were waiting for the symbolizer (stacks_queue_full); reported
 *     as drop events, so the counts reach the collector; or its stacks
 *     were gone from the stack map when read (metric lost_stacks_total);
 *   - pending: recorded, not named yet. probe_stacks_settled() says when a
 *     time window has none left; the agent holds a finished step's record
 *     until then, for a bounded time (agent/steps/stepframes.h);
 *   - named: counted in the top frames of the step whose window holds it,
 *     while it is among the last `window` named samples (a query reaching
 *     back past the oldest one is counted as window_short).
 * A step reported while some of its samples are still pending counts them
 * as one pseudo-frame, "[unresolved]" (self = total = their number), which
 * is always kept in the top frames; they are not counted again later.
 * Addresses without a symbol are named "[module]+0xOFFSET". */
#ifndef ARGUS_AGENT_PROBE_STACKS_H
#define ARGUS_AGENT_PROBE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/probes/stacks_sample.h"
#include "agent/sources/source.h"

#define PROBE_STACKS_DEFAULT_HZ 19
#define PROBE_STACKS_MAX_HZ 99

#define PROBE_STACKS_UNRESOLVED "[unresolved]"

struct probe_stacks_config {
    uint32_t frequency_hz; /* 0 = default; clamped to PROBE_STACKS_MAX_HZ */
    uint32_t window;       /* named samples kept (ring); 0 = 16384 */
    uint32_t queue;        /* samples waiting for the symbolizer at most; 0 = 8192 */
    uint64_t cache_bytes;  /* symbol cache cap; 0 = SYMCACHE_DEFAULT_BYTES */
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
 * count, into out, after taking in what the symbolizer has finished. When
 * samples of that window are still pending, the last entry is the
 * "[unresolved]" pseudo-frame with their number. state is the probe's (from
 * create). Main thread; never blocks. Returns how many entries. */
size_t probe_stacks_top_frames(void *state, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                               struct probe_stacks_frame *out, size_t max);

/* The frames of pid's last named sample, however old, leaf first, at most
 * max names into out (valid while the probe lives), after taking in what
 * the symbolizer has finished (a hung rank's last stack: agent/liveness/).
 * Main thread; never blocks. Returns how many, 0 when none. */
size_t probe_stacks_last_stack(void *state, uint32_t pid, const char **out, size_t max);

/* True when no sample taken before to_ns is still pending: the BPF ring is
 * read and the symbolizer's results taken in first. Main thread; never
 * blocks. */
bool probe_stacks_settled(void *state, uint64_t to_ns);

/* What the ring callback does once it has read a sample's addresses from
 * the stack map: hand them to the symbolizer (or count a drop). The whole
 * main-loop cost of a sample; exposed for tests. Returns 0 or -ENOBUFS. */
int probe_stacks_record(void *state, const struct stacks_raw *raw);

extern const struct source_ops probe_stacks_ops;

#endif
