/* Leveled logging for the daemons and tools.
 *
 * Plain lines on stderr: "LEVEL module: message". Under systemd (JOURNAL_STREAM
 * set) each line starts with the syslog priority prefix "<N>" instead, which
 * journald turns into the entry's priority. Arguments are not evaluated when
 * the level is disabled. Hot paths never log per event: they count, and use
 * log_ratelimit to report a summary at most every interval.
 */
#ifndef ARGUS_COMMON_LOG_H
#define ARGUS_COMMON_LOG_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/clock.h"

enum log_level {
    LOG_LEVEL_ERROR = 3, /* syslog priorities, so journald keeps them */
    LOG_LEVEL_WARN = 4,
    LOG_LEVEL_INFO = 6,
    LOG_LEVEL_DEBUG = 7,
};

extern enum log_level log_threshold;

/* Set the process-wide name printed on every line (default "argus"). The
 * string must outlive all logging. */
void log_set_ident(const char *ident);

/* Parse "error", "warn", "info" or "debug". Returns 0, or -EINVAL. */
int log_level_parse(const char *text, enum log_level *out);
const char *log_level_name(enum log_level level);

/* Set the threshold. */
void log_set_level(enum log_level level);

/* Redirect output (tests). NULL restores stderr. */
void log_set_stream(FILE *stream);

/* Write one line; use the macros instead. */
void log_emit(enum log_level level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_at(level, module, ...)                                                                 \
    do {                                                                                           \
        if ((level) <= log_threshold)                                                              \
            log_emit((level), (module), __VA_ARGS__);                                              \
    } while (0)

#define log_error(module, ...) log_at(LOG_LEVEL_ERROR, module, __VA_ARGS__)
#define log_warn(module, ...) log_at(LOG_LEVEL_WARN, module, __VA_ARGS__)
#define log_info(module, ...) log_at(LOG_LEVEL_INFO, module, __VA_ARGS__)
#define log_debug(module, ...) log_at(LOG_LEVEL_DEBUG, module, __VA_ARGS__)

/* A token bucket for one message site: at most `burst` lines per `interval_ns`.
 * Zero-initialise, then set interval_ns and burst. Not thread-safe: one per
 * thread or protect it with the caller's lock. */
struct log_ratelimit {
    uint64_t interval_ns;
    uint32_t burst;
    uint32_t printed; /* lines printed in the current window */
    uint64_t window_start_ns;
    uint64_t suppressed; /* lines suppressed since the last printed one */
};

/* Returns true when the caller may print now. When lines were suppressed
 * before this one, *suppressed (if not NULL) receives their number so the
 * caller can say "(N similar messages suppressed)". now_ns is a monotonic time. */
bool log_ratelimit_allow(struct log_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed);

#define log_ratelimited(rl, level, module, fmt, ...)                                               \
    do {                                                                                           \
        uint64_t log_suppressed_;                                                                  \
        if ((level) <= log_threshold &&                                                            \
            log_ratelimit_allow((rl), clock_mono_ns(), &log_suppressed_)) {                        \
            if (log_suppressed_)                                                                   \
                log_emit((level), (module), fmt " (%" PRIu64 " similar suppressed)",               \
                         ##__VA_ARGS__, log_suppressed_);                                          \
            else                                                                                   \
                log_emit((level), (module), fmt, ##__VA_ARGS__);                                   \
        }                                                                                          \
    } while (0)

#endif
