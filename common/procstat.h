/* The standard process_* metrics (what Prometheus client libraries export)
 * and argus_build_info, for both daemons' /metrics. Read from /proc/self
 * and getrusage/getrlimit at each call: no state, thread-safe. */
#ifndef ARGUS_COMMON_PROCSTAT_H
#define ARGUS_COMMON_PROCSTAT_H

#include <stdint.h>

struct http_buf;

struct procstat {
    double cpu_seconds;        /* user + system CPU time */
    uint64_t resident_bytes;   /* RSS */
    uint64_t virtual_bytes;    /* address space size */
    uint64_t open_fds;         /* entries in /proc/self/fd */
    uint64_t max_fds;          /* RLIMIT_NOFILE soft limit */
    double start_time_seconds; /* process start, UNIX seconds */
};

/* Fill *out for this process. Returns 0, or -errno when /proc is not
 * readable (the fields read so far are kept, the rest are 0). */
int procstat_read(struct procstat *out);

/* The start time in clock ticks after boot: field 22 of a /proc/PID/stat
 * line (the command field may hold spaces and parentheses). Returns 0 and
 * sets *ticks, or -EINVAL for a line it cannot parse. */
int procstat_parse_start_ticks(const char *stat_line, uint64_t *ticks);

/* The version and commit this binary was built from ("unknown" when the
 * build had no git). Static strings. */
const char *procstat_version(void);
const char *procstat_commit(void);

/* Write process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds and argus_build_info{program, version,
 * commit} = 1 into b. A process_* metric whose source cannot be read is
 * left out rather than written as 0. */
void procstat_metrics(struct http_buf *b, const char *program);

#endif
