#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

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

static struct timespec clock_timespec(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / NSEC_PER_SEC),
                             .tv_nsec = (long)(ns % NSEC_PER_SEC)};
}

void clock_sleep_ns(uint64_t ns)
{
    struct timespec ts = clock_timespec(ns);

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int clock_timerfd(uint64_t first_ns, uint64_t period_ns)
{
    struct itimerspec its = {.it_interval = clock_timespec(period_ns),
                             .it_value = clock_timespec(first_ns)};
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), err;

    if (fd < 0 || timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        err = -errno;
        if (fd >= 0)
            close(fd);
        return err;
    }
    return fd;
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
