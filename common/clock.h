/* Time helpers. All argus timestamps are nanoseconds in uint64_t. */
#ifndef ARGUS_COMMON_CLOCK_H
#define ARGUS_COMMON_CLOCK_H

#include <stdint.h>

#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns() and of CUPTI with
 * argus's timestamp callback. */
uint64_t clock_mono_ns(void);

/* CLOCK_REALTIME in ns since the UNIX epoch. */
uint64_t clock_real_ns(void);

/* realtime - monotonic, sampled as the midpoint of two realtime reads around
 * one monotonic read. Add it to a monotonic timestamp to get UNIX ns. */
int64_t clock_mono_to_real_offset(void);

/* Convert a monotonic timestamp with an offset from clock_mono_to_real_offset. */
static inline uint64_t clock_mono_to_real(uint64_t mono_ns, int64_t offset)
{
    return (uint64_t)((int64_t)mono_ns + offset);
}

/* realtime - monotonic as it moves: it changes when the realtime clock is
 * set (an NTP or PTP step, a VM resumed from a pause), never by slewing,
 * which moves both clocks alike. A monotonic timestamp converts with the
 * offset that held at its time, i.e. to what the realtime clock read then,
 * which is what the job's own logs and the other nodes say. The newest
 * CLOCK_OFFSET_KEEP offsets are kept, each from the monotonic time it was
 * first seen (older timestamps take the oldest kept). Not thread-safe: one
 * thread refreshes and converts. */
#define CLOCK_OFFSET_KEEP 8
#define CLOCK_OFFSET_STEP_NS (20 * NSEC_PER_USEC) /* smaller moves are sampling noise */

struct clock_offset {
    uint32_t n; /* at[0..n), oldest first */
    struct clock_offset_at {
        uint64_t since_mono_ns;
        int64_t ns;
    } at[CLOCK_OFFSET_KEEP];
};

/* An offset that holds for all time (ns; a test's, or the sample at start). */
void clock_offset_init(struct clock_offset *o, int64_t ns);
/* Sample the clocks now (mono_now_ns: clock_mono_ns() of the caller). When
 * the offset moved by more than CLOCK_OFFSET_STEP_NS, the new one holds from
 * now on and the move is returned (new - old); else 0 (also when the sample
 * was too coarse to tell, a preempted read). */
int64_t clock_offset_refresh(struct clock_offset *o, uint64_t mono_now_ns);
/* Record a new offset from mono_ns on (clock_offset_refresh's step; tests). */
void clock_offset_set(struct clock_offset *o, uint64_t mono_ns, int64_t ns);
/* A monotonic timestamp as UNIX ns, with the offset of its time. */
uint64_t clock_offset_to_real(const struct clock_offset *o, uint64_t mono_ns);
/* A UNIX timestamp as monotonic ns: the inverse of clock_offset_to_real.
 * A time the clock skipped (set on) maps to the set; one it read twice (set
 * back) to the later reading. */
uint64_t clock_offset_to_mono(const struct clock_offset *o, uint64_t unix_ns);

/* Sleep for ns; a signal does not cut the sleep short. */
void clock_sleep_ns(uint64_t ns);

/* A nonblocking CLOCK_MONOTONIC timerfd that fires at first_ns (absolute,
 * clock_mono_ns()) and then every period_ns. Returns the fd or -errno. */
int clock_timerfd(uint64_t first_ns, uint64_t period_ns);

/* Format a UNIX ns timestamp as RFC 3339 UTC with milliseconds
 * ("2026-12-02T09:45:04.123Z") into buf (at least 32 bytes). Returns buf. */
char *clock_format_rfc3339(uint64_t unix_ns, char *buf, unsigned long len);

#endif
