#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* realtime - monotonic: the sample of three with the narrowest pair of
 * realtime reads around the monotonic one (a preempted sample puts the
 * midpoint off by up to half its width, *width). */
static int64_t clock_sample_offset(uint64_t *width)
{
    int64_t best = 0;

    *width = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t r0 = read_clock(CLOCK_REALTIME);
        uint64_t m = read_clock(CLOCK_MONOTONIC);
        uint64_t r1 = read_clock(CLOCK_REALTIME);

        if (r1 - r0 < *width) {
            *width = r1 - r0;
            best = (int64_t)(r0 + (r1 - r0) / 2) - (int64_t)m;
        }
    }
    return best;
}

int64_t clock_mono_to_real_offset(void)
{
    uint64_t width;

    return clock_sample_offset(&width);
}

void clock_offset_init(struct clock_offset *o, int64_t ns)
{
    *o = (struct clock_offset){.n = 1, .at[0] = {0, ns}};
}

void clock_offset_set(struct clock_offset *o, uint64_t mono_ns, int64_t ns)
{
    if (o->n == CLOCK_OFFSET_KEEP) {
        memmove(o->at, o->at + 1, (CLOCK_OFFSET_KEEP - 1) * sizeof(o->at[0]));
        o->n--;
    }
    o->at[o->n++] = (struct clock_offset_at){mono_ns, ns};
}

int64_t clock_offset_refresh(struct clock_offset *o, uint64_t mono_now_ns)
{
    uint64_t width;
    int64_t now = clock_sample_offset(&width), moved = now - o->at[o->n - 1].ns;

    if (width > CLOCK_OFFSET_STEP_NS || /* every sample preempted: the next turn's */
        (moved <= (int64_t)CLOCK_OFFSET_STEP_NS && moved >= -(int64_t)CLOCK_OFFSET_STEP_NS))
        return 0;
    clock_offset_set(o, mono_now_ns, now);
    return moved;
}

uint64_t clock_offset_to_real(const struct clock_offset *o, uint64_t mono_ns)
{
    uint32_t i = o->n - 1;

    while (i > 0 && mono_ns < o->at[i].since_mono_ns)
        i--;
    return clock_mono_to_real(mono_ns, o->at[i].ns);
}

uint64_t clock_offset_to_mono(const struct clock_offset *o, uint64_t unix_ns)
{
    for (uint32_t i = o->n; i-- > 0;) {
        int64_t m = (int64_t)unix_ns - o->at[i].ns;

        if (m >= (int64_t)o->at[i].since_mono_ns || i == 0)
            return i + 1 < o->n && m > (int64_t)o->at[i + 1].since_mono_ns
                       ? o->at[i + 1].since_mono_ns /* skipped by a forward set */
                       : (uint64_t)m;
    }
    return unix_ns;
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
