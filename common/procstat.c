#include "common/procstat.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "build_info.h"
#include "common/http.h"

const char *procstat_version(void)
{
    return ARGUS_BUILD_VERSION;
}

const char *procstat_commit(void)
{
    return ARGUS_BUILD_COMMIT;
}

int procstat_parse_start_ticks(const char *stat_line, uint64_t *ticks)
{
    const char *p = strrchr(stat_line, ')'); /* the command ends at the last ')' */
    unsigned long long v;

    if (!p)
        return -EINVAL;
    /* after ") ": state is field 3, starttime field 22: skip 19 fields */
    p++;
    for (int field = 3; field < 22; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -EINVAL;
        while (*p && *p != ' ')
            p++;
    }
    if (sscanf(p, " %llu", &v) != 1)
        return -EINVAL;
    *ticks = v;
    return 0;
}

/* The first line of path into buf. 0 or -errno. */
static int procstat_read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    int r = 0;

    if (!f)
        return -errno;
    if (!fgets(buf, (int)len, f))
        r = -EIO;
    fclose(f);
    return r;
}

/* Boot time (UNIX seconds) from /proc/stat's btime line. 0 or -errno. */
static int procstat_boot_time(uint64_t *btime)
{
    FILE *f = fopen("/proc/stat", "re");
    char line[256];
    int r = -ENOENT;

    if (!f)
        return -errno;
    while (r < 0 && fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %" SCNu64, btime) == 1)
            r = 0;
    fclose(f);
    return r;
}

static int procstat_start_time(double *seconds)
{
    char line[1024];
    uint64_t ticks, btime;
    long hz = sysconf(_SC_CLK_TCK);
    int r = procstat_read_line("/proc/self/stat", line, sizeof(line));

    r = r < 0 ? r : procstat_parse_start_ticks(line, &ticks);
    r = r < 0 ? r : procstat_boot_time(&btime);
    if (r < 0)
        return r;
    *seconds = (double)btime + (double)ticks / (double)(hz > 0 ? hz : 100);
    return 0;
}

static int procstat_memory(uint64_t *resident, uint64_t *virt)
{
    char line[256];
    unsigned long long size, rss;
    long page = sysconf(_SC_PAGESIZE);
    int r = procstat_read_line("/proc/self/statm", line, sizeof(line));

    if (r < 0)
        return r;
    if (sscanf(line, "%llu %llu", &size, &rss) != 2)
        return -EINVAL;
    *virt = size * (uint64_t)page;
    *resident = rss * (uint64_t)page;
    return 0;
}

static int procstat_fds(uint64_t *open_fds)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    uint64_t n = 0;

    if (!d)
        return -errno;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    *open_fds = n > 0 ? n - 1 : 0; /* less the one opendir holds */
    return 0;
}

int procstat_read(struct procstat *out)
{
    struct rusage ru;
    struct rlimit rl;
    int r = 0, e;

    *out = (struct procstat){0};
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        out->cpu_seconds = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
    e = procstat_memory(&out->resident_bytes, &out->virtual_bytes);
    r = r ? r : e;
    e = procstat_fds(&out->open_fds);
    r = r ? r : e;
    e = procstat_start_time(&out->start_time_seconds);
    return r ? r : e;
}

void procstat_metrics(struct http_buf *b, const char *program)
{
    struct procstat p;
    char labels[256];

    procstat_read(&p);
    http_buf_metric(b, "process_cpu_seconds_total", "counter",
                    "Total user and system CPU time spent in seconds.", "", p.cpu_seconds);
    if (p.resident_bytes)
        http_buf_metric(b, "process_resident_memory_bytes", "gauge",
                        "Resident memory size in bytes.", "", (double)p.resident_bytes);
    if (p.virtual_bytes)
        http_buf_metric(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
                        "", (double)p.virtual_bytes);
    if (p.open_fds)
        http_buf_metric(b, "process_open_fds", "gauge", "Number of open file descriptors.", "",
                        (double)p.open_fds);
    if (p.max_fds)
        http_buf_metric(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                        "", (double)p.max_fds);
    if (p.start_time_seconds > 0)
        http_buf_metric(b, "process_start_time_seconds", "gauge",
                        "Start time of the process since unix epoch in seconds.", "",
                        p.start_time_seconds);
    snprintf(labels, sizeof(labels), "program=\"%s\",version=\"%s\",commit=\"%s\"", program,
             procstat_version(), procstat_commit());
    http_buf_metric(b, "argus_build_info", "gauge",
                    "always 1: the program, version and git commit it was built from", labels, 1);
}
