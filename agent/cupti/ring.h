/* The shared-memory span ring between libargus-cupti.so (inside a training
 * process, the only writer) and the agent (source_cupti, the only reader),
 * and the hello/control messages on the unix socket that hands it over.
 *
 * One ring per process and per agent connection: a memfd of
 * sizeof(struct cupti_ring_header) + slots * sizeof(struct cupti_span),
 * passed with SCM_RIGHTS in the hello. Slots are fixed 40-byte records; a name
 * record is followed by ceil(len / 40) slots of raw string bytes. head (next
 * slot to write) is advanced by the writer with a release store after the
 * slots are written; tail (next slot to read) by the reader after it has
 * consumed them. Both grow without bound; slot = index & (slots - 1). When the
 * ring is full the writer drops and counts, it never waits.
 *
 * All timestamps are CLOCK_MONOTONIC ns (the library registers a CUPTI
 * timestamp callback). Layout is little-endian native, same host only. */
#ifndef ARGUS_AGENT_CUPTI_RING_H
#define ARGUS_AGENT_CUPTI_RING_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define CUPTI_RING_MAGIC 0x41524743u /* "ARGC" */
#define CUPTI_RING_VERSION 1u
#define CUPTI_RING_NAME_MAX 2048u /* longer names are truncated (id covers the full name) */
#define CUPTI_SOCKET_DEFAULT "/run/argus/cupti.sock"

enum cupti_span_kind {
    CUPTI_SPAN_KERNEL = 1, /* GPU kernel: start, dur, name_id, stream, corr, aux = launch shape */
    CUPTI_SPAN_MEMCPY,     /* name_id = name_id("Memcpy HtoD") ... */
    CUPTI_SPAN_MEMSET,
    CUPTI_SPAN_API,    /* runtime launch call (host): start, dur, corr, tid */
    CUPTI_SPAN_MARKER, /* NVTX range: start (push), dur (0 = still open), name_id, tid, aux = id */
    CUPTI_SPAN_STEP,   /* a step marker began: start, aux = step number, flags SAMPLED */
    CUPTI_SPAN_NAME,   /* aux = length; name_id; followed by string slots */
    CUPTI_SPAN_RANGE_END /* NVTX range end: start = end time, aux = marker id */
};

enum cupti_span_flags {
    CUPTI_SPAN_SAMPLED = 1u << 0,       /* STEP: kernels of this step are traced */
    CUPTI_SPAN_STEP_NUMBERED = 1u << 1, /* STEP: aux is the step number from the name */
    CUPTI_SPAN_PHASE = 1u << 2,         /* MARKER: a range argus projects (cupti_ring_is_phase) */
};

/* Is name an NVTX range projected onto the GPU: step, forward, backward,
 * optimizer, ProfilerStep#N, or one of the four as "## name ##"? */
static inline int cupti_ring_is_phase(const char *name)
{
    static const char *const phases[] = {"step", "forward", "backward", "optimizer"};
    size_t n = strlen(name);

    if (strncmp(name, "ProfilerStep#", 13) == 0)
        return 1;
    if (n > 6 && strncmp(name, "## ", 3) == 0 && strcmp(name + n - 3, " ##") == 0) {
        name += 3;
        n -= 6;
    }
    for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
        if (strlen(phases[i]) == n && strncmp(name, phases[i], n) == 0)
            return 1;
    return 0;
}

/* Is name a step range ("step", "## step ##", "ProfilerStep#N")? */
static inline int cupti_ring_is_step(const char *name)
{
    return strcmp(name, "step") == 0 || strcmp(name, "## step ##") == 0 ||
           strncmp(name, "ProfilerStep#", 13) == 0;
}

struct cupti_span {
    uint64_t start_ns;
    uint64_t dur_ns;
    uint64_t name_id;
    uint32_t correlation;
    uint32_t stream; /* API/MARKER: thread id */
    uint16_t kind;   /* enum cupti_span_kind */
    uint16_t flags;
    uint32_t aux;
};
_Static_assert(sizeof(struct cupti_span) == 40, "cupti_span is 40 bytes");

/* Drop reasons, counted in the header (per ring: what this connection has
 * not been told yet; records lost while no agent was there are reported on
 * the next ring). The completion queue cannot overflow (one slot per pool
 * buffer), so it has no reason; sampled-out steps are not losses. */
enum cupti_drop_reason {
    CUPTI_DROP_NO_BUFFER = 0, /* pool empty: CUPTI dropped records (its count) */
    CUPTI_DROP_RING_FULL,     /* reader too slow */
    CUPTI_DROP_NO_AGENT,      /* no agent connected */
    CUPTI_DROP_REASONS
};

struct cupti_ring_header {
    uint32_t magic;
    uint32_t version;
    uint32_t slots; /* power of two */
    uint32_t pid;
    _Alignas(64) _Atomic uint64_t head; /* written by the library */
    _Alignas(64) _Atomic uint64_t tail; /* written by the agent */
    _Alignas(64) _Atomic uint64_t drops[CUPTI_DROP_REASONS];
    _Atomic uint64_t records;       /* CUPTI records seen by the library */
    _Atomic uint64_t step_asides;   /* times another CUPTI client took over */
    _Atomic uint32_t stepped_aside; /* 1 while another client holds CUPTI */
    _Atomic uint32_t doorbell;      /* 1 = writer rang, reader has not drained yet */
};

static inline struct cupti_span *cupti_ring_slots(struct cupti_ring_header *h)
{
    return (struct cupti_span *)(h + 1);
}

static inline uint64_t cupti_ring_bytes(uint32_t slots)
{
    return sizeof(struct cupti_ring_header) + (uint64_t)slots * sizeof(struct cupti_span);
}

/* Slots a name of len bytes takes (the NAME slot plus its string slots). */
static inline uint32_t cupti_ring_name_slots(uint32_t len)
{
    return 1 + (len + sizeof(struct cupti_span) - 1) / sizeof(struct cupti_span);
}

/* Writer: free slots now. */
static inline uint64_t cupti_ring_free(struct cupti_ring_header *h, uint64_t head)
{
    return h->slots - (head - atomic_load_explicit(&h->tail, memory_order_acquire));
}

/* Writer: copy len bytes of a string into the string slots after index at. */
static inline void cupti_ring_put_bytes(struct cupti_ring_header *h, uint64_t at, const char *s,
                                        uint32_t len)
{
    struct cupti_span *slots = cupti_ring_slots(h);

    for (uint32_t off = 0; off < len; off += sizeof(struct cupti_span), at++) {
        uint32_t n = len - off < sizeof(struct cupti_span) ? len - off : sizeof(struct cupti_span);
        memcpy(&slots[at & (h->slots - 1)], s + off, n);
    }
}

/* Reader: copy a name's string slots (starting at index at) into out
 * (CUPTI_RING_NAME_MAX + 1 bytes), NUL-terminated. */
static inline void cupti_ring_get_bytes(struct cupti_ring_header *h, uint64_t at, char *out,
                                        uint32_t len)
{
    struct cupti_span *slots = cupti_ring_slots(h);

    if (len > CUPTI_RING_NAME_MAX)
        len = CUPTI_RING_NAME_MAX;
    for (uint32_t off = 0; off < len; off += sizeof(struct cupti_span), at++) {
        uint32_t n = len - off < sizeof(struct cupti_span) ? len - off : sizeof(struct cupti_span);
        memcpy(out + off, &slots[at & (h->slots - 1)], n);
    }
    out[len] = '\0';
}

/* Hello: library -> agent, once per connection, ring memfd in SCM_RIGHTS. */
struct cupti_hello {
    uint32_t magic; /* CUPTI_RING_MAGIC */
    uint32_t version;
    uint32_t pid;
    int32_t rank; /* RANK, -1 when unset */
    int32_t local_rank;
    uint32_t slots;
    char job[64]; /* ARGUS_JOB / TORCHELASTIC_RUN_ID / SLURM_JOB_ID */
    char comm[16];
};

/* Sampling modes the agent can switch at runtime (control message). */
enum cupti_sample_mode {
    CUPTI_SAMPLE_ALWAYS = 0,
    CUPTI_SAMPLE_STEPS, /* trace k of every n steps */
    CUPTI_SAMPLE_TIME,  /* trace k ms of every n ms */
};

/* Control: agent -> library, any time on the hello socket. */
struct cupti_control {
    uint32_t magic;
    uint32_t mode; /* enum cupti_sample_mode */
    uint32_t k;
    uint32_t n;
};

#endif
