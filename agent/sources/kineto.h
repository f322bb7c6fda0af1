/* Reader of PyTorch profiler (Kineto) traces: gzip'd or plain Chrome-trace
 * JSON with a traceEvents array. It extracts what argus needs to import a
 * trace into its pipeline (DESIGN.md §9) and to test on real kernel data:
 *   - kernel spans: events with "cat": "kernel" and "ph": "X" (name, ts and
 *     dur in microseconds -> ns, args.stream, args.device, args.correlation),
 *   - training steps: "ProfilerStep#N" ranges (cat user_annotation or cpu_op),
 *   - distributedInfo.rank and world_size.
 * Each kernel is put in the step whose range holds its launch: the host time
 * of the cuda_runtime/cuda_driver call with the same correlation id, or the
 * kernel's own start when no launch is found.
 *
 * The input is untrusted: the decompressed size, the number of events, the
 * number of distinct names and the length of a name are bounded before they
 * are stored, and every failure comes with a sentence in err.
 */
#ifndef ARGUS_AGENT_KINETO_H
#define ARGUS_AGENT_KINETO_H

#include <stddef.h>
#include <stdint.h>

#define KINETO_DEFAULT_MAX_BYTES (512u << 20) /* decompressed JSON */
#define KINETO_DEFAULT_MAX_EVENTS (8u << 20)  /* traceEvents entries */
#define KINETO_DEFAULT_MAX_NAMES (1u << 20)   /* distinct kernel names */
#define KINETO_DEFAULT_MAX_NAME_LEN 16384u    /* bytes of one name */

struct kineto_limits {
    size_t max_bytes;
    size_t max_events;
    size_t max_names;
    size_t max_name_len;
};

struct kineto_span {
    uint64_t ts_ns;       /* start, on the trace's clock (ts x 1000) */
    uint64_t dur_ns;      /* duration */
    uint64_t correlation; /* args.correlation, 0 when absent */
    uint32_t name;        /* index into kineto_trace.names */
    uint32_t stream;      /* args.stream, 0 when absent */
    int32_t device;       /* args.device, -1 when absent */
    int32_t step;         /* index into kineto_trace.steps, -1 outside every step */
};

struct kineto_step {
    uint64_t number; /* N of ProfilerStep#N */
    uint64_t ts_ns;  /* host range start */
    uint64_t dur_ns; /* host range duration */
};

struct kineto_trace {
    struct kineto_span *spans; /* kernels in file order */
    size_t n_spans;
    struct kineto_step *steps; /* ordered by ts_ns */
    size_t n_steps;
    char **names;       /* distinct kernel names, first-seen order */
    uint64_t *name_ids; /* name_id() of each name (common/name_id.h) */
    size_t n_names;
    int32_t rank;       /* distributedInfo.rank, -1 when absent */
    int32_t world_size; /* distributedInfo.world_size, -1 when absent */
    size_t skipped;     /* kernel events without a usable name, ts or dur */
};

/* The default limits above. */
void kineto_limits_default(struct kineto_limits *l);

/* Load the trace at path (gzip'd or plain JSON). limits NULL = defaults. On
 * success returns 0 and *out (free with kineto_free). On failure returns a
 * negative errno, sets *out NULL and writes a sentence into err (errlen bytes,
 * may be 0): -ENOENT and friends (cannot open or read), -EFBIG (over
 * max_bytes), -EBADMSG (not JSON, or not a JSON object), -EINVAL (no
 * traceEvents array), -E2BIG (over max_events, max_names or max_name_len),
 * -ENOMEM. */
int kineto_load(const char *path, const struct kineto_limits *limits, struct kineto_trace **out,
                char *err, size_t errlen);

/* The same from len bytes of JSON text at buf (not necessarily
 * NUL-terminated; the caller keeps buf). */
int kineto_parse(const char *buf, size_t len, const struct kineto_limits *limits,
                 struct kineto_trace **out, char *err, size_t errlen);

/* Free a trace from kineto_load/kineto_parse. NULL is a no-op. */
void kineto_free(struct kineto_trace *t);

#endif
