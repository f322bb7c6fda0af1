#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum log_level log_threshold = LOG_LEVEL_INFO;

static const char *log_ident = "argus";
static FILE *log_stream;
static int log_journal = -1; /* -1 unknown, 0 plain, 1 syslog prefixes */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct {
    enum log_level level;
    const char *name;
} log_names[] = {
    {LOG_LEVEL_ERROR, "error"},
    {LOG_LEVEL_WARN, "warn"},
    {LOG_LEVEL_INFO, "info"},
    {LOG_LEVEL_DEBUG, "debug"},
};

void log_set_ident(const char *ident)
{
    log_ident = ident;
}

void log_set_level(enum log_level level)
{
    log_threshold = level;
}

void log_set_stream(FILE *stream)
{
    log_stream = stream;
}

int log_level_parse(const char *text, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++) {
        if (strcmp(text, log_names[i].name) == 0) {
            *out = log_names[i].level;
            return 0;
        }
    }
    return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
    for (size_t i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
        if (log_names[i].level == level)
            return log_names[i].name;
    return "?";
}

void log_emit(enum log_level level, const char *module, const char *fmt, ...)
{
    char line[1024];
    int off;
    va_list ap;

    if (log_journal < 0)
        log_journal = getenv("JOURNAL_STREAM") != NULL;
    if (log_journal)
        off = snprintf(line, sizeof(line), "<%d>%s: ", (int)level, module);
    else
        off = snprintf(line, sizeof(line), "%s %s %s: ", log_ident, log_level_name(level), module);
    if (off < 0 || (size_t)off >= sizeof(line))
        off = 0;
    va_start(ap, fmt);
    vsnprintf(line + off, sizeof(line) - (size_t)off, fmt, ap);
    va_end(ap);

    /* One fputs per line under a lock, so lines of two threads never mix. */
    pthread_mutex_lock(&log_lock);
    FILE *out = log_stream ? log_stream : stderr;
    fputs(line, out);
    fputc('\n', out);
    fflush(out);
    pthread_mutex_unlock(&log_lock);
}

bool log_ratelimit_allow(struct log_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed)
{
    if (suppressed)
        *suppressed = 0;
    if (rl->interval_ns == 0 || rl->burst == 0)
        return true;
    if (rl->window_start_ns == 0 || now_ns - rl->window_start_ns >= rl->interval_ns) {
        rl->window_start_ns = now_ns;
        rl->printed = 0;
    }
    if (rl->printed >= rl->burst) {
        rl->suppressed++;
        return false;
    }
    rl->printed++;
    if (suppressed)
        *suppressed = rl->suppressed;
    rl->suppressed = 0;
    return true;
}
