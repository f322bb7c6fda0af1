/* Control interface of the CUPTI test double (build/tests/libcupti-double.so).
 * The double exports the CUPTI calls libargus-cupti.so uses, plus these
 * functions, which a test app finds with dlopen(path, RTLD_NOLOAD) + dlsym.
 *
 * Records are produced by the double's own thread into the buffers the
 * client's request callback hands it; full buffers (and all of them on
 * cuptiActivityFlushAll) go back through the completion callback, called from
 * the double's thread (or the flushing thread), as CUPTI does. Records of
 * kinds the client has not enabled are not produced. */
#ifndef ARGUS_TESTS_CUPTI_DOUBLE_H
#define ARGUS_TESTS_CUPTI_DOUBLE_H

#include <stdint.h>

struct cupti_double_stats {
    uint64_t produced;       /* records placed in a buffer */
    uint64_t dropped;        /* records lost: the client gave no buffer */
    uint64_t skipped;        /* records of disabled kinds, never produced */
    uint64_t kernels;        /* kernel records produced */
    uint64_t buffers;        /* buffers completed */
    uint64_t empty_requests; /* requests answered with no buffer */
    uint64_t callbacks;      /* request + completion callbacks timed */
    uint64_t cb_max_ns;      /* slowest client callback */
    uint64_t cb_total_ns;    /* time spent in client callbacks */
    uint64_t cb_p99_ns;
    uint64_t foreign_records;   /* records that went to the foreign client */
    uint32_t enabled_kernel;    /* CONCURRENT_KERNEL enabled now */
    uint32_t foreign_callbacks; /* the foreign client's buffer callbacks are registered */
};

/* Load a Kineto trace (gzip'd Chrome trace JSON) for replay. Returns the
 * number of records it yields, or -errno. */
typedef int (*cupti_double_load_fn)(const char *path);
/* Produce: the loaded trace (rate 0 = as fast as possible, else records/s),
 * or, with nothing loaded, count generated kernel+runtime records at rate
 * records/s. Returns at once; the double's thread does the work. */
typedef int (*cupti_double_play_fn)(uint64_t rate, uint64_t count);
/* Wait until play is done and every buffer went back. */
typedef void (*cupti_double_wait_fn)(void);
/* Another CUPTI client (torch.profiler, Nsight) arrives (on) or leaves. On
 * arrival it holds the subscriber slot (cuptiSubscribe answers
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), registers its own buffer
 * callbacks and enables kernels; on leaving it disables every kind and
 * leaves its callbacks registered, as a real client's teardown does. */
typedef void (*cupti_double_foreign_fn)(int on);
typedef void (*cupti_double_stats_fn)(struct cupti_double_stats *out);
/* Generated mode: emit a ProfilerStep#N NVTX range every `every` launches. */
typedef int (*cupti_double_gen_steps_fn)(uint32_t every);

/* The exported functions (prototypes for the double itself). */
int cupti_double_load(const char *path);
int cupti_double_play(uint64_t rate, uint64_t count);
void cupti_double_wait(void);
int cupti_double_gen_steps(uint32_t every);
void cupti_double_foreign(int on);
void cupti_double_stats(struct cupti_double_stats *out);

#endif
