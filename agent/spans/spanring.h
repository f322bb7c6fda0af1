/* agent/spans/: the drill-down stage. It takes in every event the sources
 * deliver (kernels, phases, collectives, steps, host counters) and keeps the
 * last few minutes of them per rank as raw spans, so that when the collector
 * flags a suspect it can ask for a window of what the rank really did
 * (Ack.captures) and get it back (Batch.traces). spanring.h is one rank's
 * ring; spans.h is the agent's set of rings with the shared byte cap and the
 * capture path.
 *
 * The ring: spans go into an open chunk (raw, at most SPANRING_CHUNK_SPANS);
 * a chunk is sealed when full or when its first span is older than
 * chunk_ns: its spans are coded column by column (times and ids as deltas
 * against the span before, varints; about 5-6 B a kernel span of a real
 * trace against 48 raw), LZ4-compressed (one block) into a chunk of exactly that size, and
 * checksummed (CRC32C of the compressed bytes). The bytes a ring reports
 * (spanring_get_stats) are the heap its chunks hold. Sealed chunks form a FIFO: the oldest
 * goes first when the ring holds more than keep_ns of time (dropped by age)
 * or when the owner asks (spanring_drop_oldest, for the cap). A chunk whose
 * bytes do not match their checksum, or that does not decompress to exactly
 * its span count, is refused when read (counted, never returned).
 *
 * Times are CLOCK_MONOTONIC ns as the events carry them. Single-threaded:
 * the agent's main thread. */
#ifndef ARGUS_AGENT_SPANS_SPANRING_H
#define ARGUS_AGENT_SPANS_SPANRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPANRING_CHUNK_SPANS 4096

/* One raw span (argus.v1.Span with a monotonic start). */
struct spanring_span {
    uint64_t start_ns;
    uint64_t duration_ns;
    uint64_t name_id;
    uint64_t value; /* Span.value: step number, counter increment, bytes, launch shape */
    uint32_t kind;  /* argus.v1.SpanKind */
    uint32_t stream;
    uint32_t tid;
    uint32_t correlation; /* kernels: the correlation id, 0 = unknown */
};

struct spanring_options {
    uint64_t chunk_ns; /* seal the open chunk when its first span is this old */
    uint64_t keep_ns;  /* drop sealed chunks that end more than this before the newest span */
};

struct spanring_stats {
    uint64_t spans;          /* added */
    uint64_t chunks;         /* sealed chunks held now */
    uint64_t bytes;          /* compressed bytes held now (plus the open chunk's raw bytes) */
    uint64_t dropped_age;    /* spans dropped by keep_ns */
    uint64_t dropped_cap;    /* spans dropped by spanring_drop_oldest */
    uint64_t corrupt_chunks; /* chunks refused when read */
    uint64_t oldest_ns;      /* start of the oldest span held, 0 when empty */
};

struct spanring;

/* NULL on -ENOMEM. */
struct spanring *spanring_new(const struct spanring_options *o);
void spanring_free(struct spanring *r);

/* Add one span (copied). Seals the open chunk when it is full or old, then
 * drops chunks by age. Returns 0, or -ENOMEM (the span is dropped and
 * counted in dropped_cap). */
int spanring_add(struct spanring *r, const struct spanring_span *s);

/* Seal the open chunk when its first span is older than chunk_ns at now_ns,
 * and drop chunks older than keep_ns; called from the agent's tick so that a
 * quiet rank's spans age too. */
void spanring_tick(struct spanring *r, uint64_t now_ns);

/* Seal the open chunk now (a window is about to be read). 0 or -ENOMEM. */
int spanring_seal(struct spanring *r);

/* Drop the oldest sealed chunk (the owner's byte cap). Returns the bytes
 * freed, 0 when there is no sealed chunk. */
size_t spanring_drop_oldest(struct spanring *r);

/* The start of the oldest sealed chunk, UINT64_MAX when there is none. */
uint64_t spanring_oldest_chunk_ns(const struct spanring *r);

/* Called with each span of the window; return non-zero to stop. */
typedef int (*spanring_span_fn)(void *ctx, const struct spanring_span *s);

/* Every span held (sealed and open chunks) that overlaps [from_ns, to_ns],
 * in the order added. Corrupt chunks are skipped and counted. Returns the
 * number of corrupt chunks met (0 when all were good), or -ENOMEM. */
int spanring_window(struct spanring *r, uint64_t from_ns, uint64_t to_ns, spanring_span_fn fn,
                    void *ctx);

void spanring_get_stats(const struct spanring *r, struct spanring_stats *out);

/* The compressed bytes of the index-th sealed chunk (0 = oldest), or NULL;
 * writable, for the corruption tests. */
uint8_t *spanring_chunk_bytes(struct spanring *r, size_t index, size_t *len);

#endif
