/* Test helper: run agent/discovery against a /proc tree.
 *
 *   discovery_dump [--proc DIR] [--node NAME]           one scan per stdin line
 *   discovery_dump [--proc DIR] --bench N               time N cold and N warm scans
 *
 * Interactive mode prints, per scan, one "new ..." line per new rank (with a
 * host path that opens its libc mapping, see find_mapping), one
 * "exit pid=P" line per rank gone, then "scan N ranks=R processes=P us=T". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "agent/discovery/discovery.h"
#include "agent/symbols/procmaps.h"
#include "common/clock.h"
#include "common/log.h"

/* An openable host path for the file of mapping e of ri's process (whose
 * /proc directory is proc_dir). In another mount namespace the maps path is
 * the container's, so root + path; in a chroot inside our namespace it is a
 * host path already. The inode decides; then map_files (exact, needs
 * CAP_SYS_ADMIN); then root + path unverified (overlayfs may show another
 * inode number). Returns the length or -ENOENT. */
static int mapping_host_path(const struct rank_info *ri, const char *proc_dir,
                             const struct procmaps_entry *e, char *buf, size_t len)
{
    struct stat sb;
    int n;

    n = discovery_host_path(ri, e->path, buf, len);
    if (n >= 0 && stat(buf, &sb) == 0 && sb.st_ino == e->inode)
        return n;
    n = snprintf(buf, len, "%s", e->path);
    if (n >= 0 && (size_t)n < len && stat(buf, &sb) == 0 && sb.st_ino == e->inode)
        return n;
    n = snprintf(buf, len, "%s/map_files/%" PRIx64 "-%" PRIx64, proc_dir, e->start, e->end);
    if (n >= 0 && (size_t)n < len && stat(buf, &sb) == 0)
        return n;
    n = discovery_host_path(ri, e->path, buf, len);
    return n >= 0 && stat(buf, &sb) == 0 ? n : -ENOENT;
}

/* The first file mapping of ri's process whose base name starts with prefix,
 * deleted files skipped, as a host path in buf (mapping_host_path). Returns
 * the length, -ENOENT when not mapped or not reachable, or -errno from
 * reading the maps (PROC_ROOT/PID/maps, next to ri->root). */
static int find_mapping(const struct rank_info *ri, const char *prefix, char *buf, size_t len)
{
    char proc_dir[DISCOVERY_PATH_MAX], maps[DISCOVERY_PATH_MAX + 8];
    size_t rlen = strlen(ri->root);
    struct procmaps pm;
    struct procmaps_entry e;
    int ret;

    if (rlen < 5 || strcmp(ri->root + rlen - 5, "/root") != 0)
        return -EINVAL;
    snprintf(proc_dir, sizeof(proc_dir), "%.*s", (int)(rlen - 5), ri->root);
    snprintf(maps, sizeof(maps), "%s/maps", proc_dir);
    ret = procmaps_open_file(&pm, maps);
    if (ret == 0)
        ret = -ENOENT;
    while (ret == -ENOENT && procmaps_next(&pm, &e) > 0) {
        if (e.inode == 0 || e.path[0] != '/' || e.deleted)
            continue;
        if (strncmp(strrchr(e.path, '/') + 1, prefix, strlen(prefix)) == 0)
            ret = mapping_host_path(ri, proc_dir, &e, buf, len);
    }
    procmaps_close(&pm);
    return ret == -ESRCH ? -ENOENT : ret;
}

static void print_new(void *ctx, const struct rank_info *ri)
{
    char libc[DISCOVERY_PATH_MAX + 64];

    if (find_mapping(ri, "libc.so", libc, sizeof(libc)) < 0)
        strcpy(libc, "-");
    printf("new pid=%u job=%s source=%s rank=%u local_rank=%u world=%u tp=%u/%u dp=%u/%u "
           "pp=%u/%u ep=%u/%u gpu=%d comm=%s container=%d root=%s exe=%s libc=%s\n",
           ri->pid, ri->job, ri->job_source, ri->rank, ri->local_rank, ri->world_size, ri->tp,
           ri->tp_size, ri->dp, ri->dp_size, ri->pp, ri->pp_size, ri->ep, ri->ep_size, ri->gpu,
           ri->comm, ri->in_container, ri->root, ri->exe, libc);
}

static void print_exit(void *ctx, const struct rank_info *ri)
{
    printf("exit pid=%u job=%s rank=%u\n", ri->pid, ri->job, ri->rank);
}

static const struct discovery_callbacks print_cb = {print_new, print_exit, NULL};

static uint64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* One scan; *us gets its wall time, *cpu (when not NULL) its CPU time. */
static int timed_scan(struct discovery *d, const struct discovery_callbacks *cb, uint64_t *us,
                      uint64_t *cpu)
{
    uint64_t t0 = clock_mono_ns(), c0 = cpu_us();
    int n = discovery_scan(d, cb, NULL);
    *us = (clock_mono_ns() - t0) / 1000;
    if (cpu)
        *cpu += cpu_us() - c0;
    return n;
}

/* Wall and CPU time of a cold scan (fresh table: every environ read) and a
 * warm one (stat only), averaged over rounds. CPU time is the figure to
 * trust on a loaded machine. */
static int bench(const struct discovery_options *o, int rounds)
{
    uint64_t cold = 0, warm = 0, cold_cpu = 0, warm_cpu = 0, us;
    struct discovery_stats st = {0};

    log_set_level(LOG_LEVEL_ERROR); /* each cold scan warns about the same processes */
    for (int i = 0; i < rounds; i++) {
        struct discovery *d = discovery_new(o);
        if (!d || timed_scan(d, NULL, &us, &cold_cpu) < 0)
            return 1;
        cold += us;
        if (timed_scan(d, NULL, &us, &warm_cpu) < 0)
            return 1;
        warm += us;
        discovery_get_stats(d, &st);
        discovery_free(d);
    }
    uint64_t r = (uint64_t)rounds;
    printf("bench processes=%" PRIu64 " ranks=%" PRIu64 " cold_us=%" PRIu64 " cold_cpu_us=%" PRIu64
           " warm_us=%" PRIu64 " warm_cpu_us=%" PRIu64 " rounds=%d\n",
           st.processes, st.ranks, cold / r, cold_cpu / r, warm / r, warm_cpu / r, rounds);
    return 0;
}

int main(int argc, char **argv)
{
    struct discovery_options o = {0};
    int rounds = 0;
    char line[64];
    uint64_t us;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--proc") == 0)
            o.proc_root = argv[i + 1];
        else if (strcmp(argv[i], "--node") == 0)
            o.node = argv[i + 1];
        else if (strcmp(argv[i], "--bench") == 0)
            rounds = atoi(argv[i + 1]);
    }
    if (rounds > 0)
        return bench(&o, rounds);
    struct discovery *d = discovery_new(&o);
    if (!d) {
        fprintf(stderr, "discovery_new: %s\n", strerror(errno));
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int scan = 1; fgets(line, sizeof(line), stdin); scan++) {
        struct discovery_stats st;
        int n = timed_scan(d, &print_cb, &us, NULL);
        discovery_get_stats(d, &st);
        printf("scan %d ranks=%d processes=%" PRIu64 " us=%" PRIu64 "\n", scan, n, st.processes,
               us);
    }
    discovery_free(d);
    return 0;
}
