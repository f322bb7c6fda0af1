/* The agent's span rings: one spanring (spanring.h) per process that
 * delivers events, named by the job and rank discovery or a source gave it,
 * under one byte cap for the whole agent (spans.ring_bytes: the oldest chunk
 * of any ring goes first) and one age (spans.keep). A capture request of the
 * collector (argus.v1.CaptureRequest) is answered with the spans of that
 * rank inside the window, packed as an argus.v1.TraceWindow (at most
 * capture_max spans, the earliest first; why spans are missing is said in
 * TraceWindow.error). Single-threaded: the agent's main thread. */
#ifndef ARGUS_AGENT_SPANS_SPANS_H
#define ARGUS_AGENT_SPANS_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/sources/event.h"
#include "common/clock.h"
#include "proto/argus.pb-c.h"

struct spans_options {
    size_t ring_bytes;                /* cap of all rings together; 0 = no rings at all */
    uint64_t keep_ns;                 /* age of the oldest span kept */
    uint64_t chunk_ns;                /* a chunk is sealed at most this long after its first span */
    size_t capture_max;               /* spans per TraceWindow */
    const struct clock_offset *clock; /* monotonic to UNIX time (outlives the spans) */
};

struct spans;

/* NULL on -ENOMEM. */
struct spans *spans_new(const struct spans_options *o);
void spans_free(struct spans *s);

/* The process pid is rank of job (job copied): its events are kept from now
 * on (a process that is not a rank gets no ring). At most 256 rings; when
 * every slot is taken, the ring of the rank that exited first goes. */
void spans_track(struct spans *s, uint32_t pid, const char *job, uint32_t rank);
/* The rank pid exited at now_ns (monotonic): its ring stays for drill-down
 * until its spans age out (keep_ns), then it is freed. */
void spans_untrack(struct spans *s, uint32_t pid, uint64_t now_ns);

/* Keep one event of a source as a span of its process (kernels, phases,
 * collectives, steps, counters; other kinds and node-level events are
 * ignored). Never fails: a span without memory is counted as dropped. */
void spans_event(struct spans *s, const struct agent_event *ev);

/* Seal and age the rings (the main loop's tick). */
void spans_tick(struct spans *s, uint64_t now_ns);

/* Answer a capture request: *out (malloc'd, caller frees, *len bytes) is the
 * packed TraceWindow, with error set when the rank is unknown here, the
 * window aged out, or chunks were corrupt. The collector repeats a request
 * until its answer is acked: one answered within SPANS_REPEAT_NS before
 * now_ns (monotonic) is -EALREADY. Returns 0, -EALREADY or -ENOMEM. */
#define SPANS_REPEAT_NS (30 * 1000000000ull)
int spans_capture(struct spans *s, const Argus__V1__CaptureRequest *req, uint64_t now_ns,
                  uint8_t **out, size_t *len);

struct spans_stats {
    uint64_t rings, spans, bytes, chunks;
    uint64_t dropped_age, dropped_cap, corrupt_chunks;
    uint64_t captures, capture_spans;
};
void spans_get_stats(const struct spans *s, struct spans_stats *out);

#endif
