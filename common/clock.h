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

/* Sleep for ns; a signal does not cut the sleep short. */
void clock_sleep_ns(uint64_t ns);

/* A nonblocking CLOCK_MONOTONIC timerfd that fires at first_ns (absolute,
 * clock_mono_ns()) and then every period_ns. Returns the fd or -errno. */
int clock_timerfd(uint64_t first_ns, uint64_t period_ns);

/* Format a UNIX ns timestamp as RFC 3339 UTC with milliseconds
 * ("2026-12-02T09:45:04.123Z") into buf (at least 32 bytes). Returns buf. */
char *clock_format_rfc3339(uint64_t unix_ns, char *buf, unsigned long len);

#endif
