#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

uint64_t clock_real_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

int64_t clock_mono_to_real_offset(void)
{
    uint64_t r0 = read_clock(CLOCK_REALTIME);
    uint64_t m = read_clock(CLOCK_MONOTONIC);
    uint64_t r1 = read_clock(CLOCK_REALTIME);
    return (int64_t)(r0 + (r1 - r0) / 2) - (int64_t)m;
}

void clock_sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / NSEC_PER_SEC),
                          .tv_nsec = (long)(ns % NSEC_PER_SEC)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

char *clock_format_rfc3339(uint64_t unix_ns, char *buf, unsigned long len)
{
    time_t secs = (time_t)(unix_ns / NSEC_PER_SEC);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (unsigned)(unix_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
    return buf;
}
