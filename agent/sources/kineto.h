/* Reader of PyTorch profiler (Kineto) traces: gzip'd or plain Chrome-trace
 * JSON with a traceEvents array. It extracts what argus needs to import a
 * trace into its pipeline (docs/design.md §9) and to test on real kernel data:
 *   - kernel spans: events with "cat": "kernel" and "ph": "X" (name, ts and
 *     dur in microseconds -> ns, args.stream, args.device, args.correlation,
 *     args.grid and args.block as the launch shape),
 *   - training steps: "ProfilerStep#N" ranges (cat user_annotation or cpu_op),
 *   - phases: user annotations (cat user_annotation on the host,
 *     gpu_user_annotation on the GPU) named "## NAME ##" (the phase is NAME)
 *     or exactly forward, backward or optimizer,
 *   - distributedInfo.rank and world_size, and baseTimeNanoseconds (added to
 *     every ts to make it a Unix time when the trace gives it).
 * Each kernel is put in the step whose range holds its launch: the host time
 * of the cuda_runtime/cuda_driver call with the same correlation id, or the
 * kernel's own start when no launch is found. A phase annotation belongs to
 * the step whose range holds its start; it is top-level when no other phase
 * annotation of the same kind (host or GPU) in that step contains it.
 *
 * The text is streamed (kineto_json.h): nothing but the records above is
 * kept, so memory follows the number of kernels, not the size of the file.
 *
 * The input is untrusted: the decompressed size, the number of events, the
 * number of distinct names and the length of a name are bounded before they
 * are stored, and every failure comes with a sentence in err.
 */
#ifndef ARGUS_AGENT_KINETO_H
#define ARGUS_AGENT_KINETO_H

#include <stdbool.h>
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
    uint32_t shape;       /* launch shape from args.grid and args.block (common/work_id.h),
                           * 0 when absent */
};

struct kineto_step {
    uint64_t number; /* N of ProfilerStep#N */
    uint64_t ts_ns;  /* host range start */
    uint64_t dur_ns; /* host range duration */
};

struct kineto_annotation {
    uint64_t ts_ns, dur_ns;
    uint32_t name; /* index into kineto_trace.phase_names */
    int32_t step;  /* index into kineto_trace.steps, -1 outside every step */
    bool gpu;      /* gpu_user_annotation (GPU time), else host */
    bool top;      /* not inside another phase annotation of its kind and step */
};

struct kineto_trace {
    struct kineto_span *spans; /* kernels in file order */
    size_t n_spans;
    struct kineto_step *steps; /* ordered by ts_ns */
    size_t n_steps;
    char **names;       /* distinct kernel names, first-seen order */
    uint64_t *name_ids; /* name_id() of each name (common/name_id.h) */
    size_t n_names;
    int32_t rank;                          /* distributedInfo.rank, -1 when absent */
    int32_t world_size;                    /* distributedInfo.world_size, -1 when absent */
    size_t skipped;                        /* kernel events without a usable name, ts or dur */
    struct kineto_annotation *annotations; /* phase annotations in file order */
    size_t n_annotations;
    char **phase_names; /* distinct phase names ("forward"), first-seen order */
    size_t n_phase_names;
    uint64_t base_ns;      /* baseTimeNanoseconds, 0 when absent */
    bool complete;         /* false: kineto_read stopped at an error */
    uint64_t error_offset; /* !complete: byte of the JSON text where it stopped */
    /* !complete: the partial steps dropped (see kineto_read), the first and
     * last of their numbers, and the kernels and annotations that went with
     * them */
    size_t dropped_steps, dropped_spans, dropped_annotations;
    uint64_t dropped_first, dropped_last;
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

/* kineto_load that keeps what it read before an error: when the text is
 * malformed or truncated (-EBADMSG), over max_bytes (-EFBIG) or unreadable
 * midway (-EIO) after the traceEvents array began, returns that error with
 * *out holding the steps read before it (steps assigned as usual, complete
 * false, error_offset the byte where reading stopped) less the partial ones,
 * and err naming the offset and what was dropped. Partial: the last step
 * (its events are the last written) and the step of the last kernel read
 * (the cut fell inside its run of kernels), with their kernels and
 * annotations (dropped_*). Kineto writes kernels in runs that need not
 * follow the steps (a real trace: 448 kernels of step 551, 577 of 552, 129
 * of 551), so a step kept may still miss kernels the file held after the
 * cut; err says so. Other failures leave *out NULL as
 * kineto_load does. */
int kineto_read(const char *path, const struct kineto_limits *limits, struct kineto_trace **out,
                char *err, size_t errlen);

/* Free a trace from kineto_load/kineto_parse. NULL is a no-op. */
void kineto_free(struct kineto_trace *t);

#endif
