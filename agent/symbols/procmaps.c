/* The /proc/PID/maps reader (see procmaps.h). */
#include "agent/symbols/procmaps.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define PROCMAPS_DELETED " (deleted)"

int procmaps_parse_line(const char *line, struct procmaps_entry *e)
{
    unsigned long long start, end, off, inode = 0;
    unsigned int major = 0, minor = 0;
    size_t suffix = strlen(PROCMAPS_DELETED);
    int pathpos = 0;

    memset(e, 0, sizeof(*e));
    if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, e->perms, &off, &major,
               &minor, &inode, &pathpos) < 4 ||
        end < start)
        return -EINVAL;
    e->start = start;
    e->end = end;
    e->file_offset = off;
    e->dev = (uint64_t)major << 32 | minor;
    e->inode = inode;
    if (pathpos > 0) {
        size_t n = strcspn(line + pathpos, "\n");

        e->deleted =
            n >= suffix && memcmp(line + pathpos + n - suffix, PROCMAPS_DELETED, suffix) == 0;
        if (n >= sizeof(e->path))
            n = sizeof(e->path) - 1;
        memcpy(e->path, line + pathpos, n);
    }
    return 0;
}

int procmaps_open_file(struct procmaps *pm, const char *path)
{
    memset(pm, 0, sizeof(*pm));
    pm->f = fopen(path, "re");
    return pm->f ? 0 : -errno;
}

int procmaps_open(struct procmaps *pm, const char *proc_root, uint32_t pid)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%u/maps", proc_root ? proc_root : "/proc", pid);

    if (n < 0 || (size_t)n >= sizeof(path)) {
        memset(pm, 0, sizeof(*pm));
        return -ENAMETOOLONG;
    }
    return procmaps_open_file(pm, path);
}

int procmaps_next(struct procmaps *pm, struct procmaps_entry *e)
{
    if (!pm->f)
        return 0;
    for (;;) {
        errno = 0;
        ssize_t n = getline(&pm->line, &pm->cap, pm->f);
        if (n < 0)
            return ferror(pm->f) ? (errno ? -errno : -EIO) : 0;
        if (procmaps_parse_line(pm->line, e) == 0)
            return 1;
    }
}

void procmaps_close(struct procmaps *pm)
{
    if (pm->f)
        fclose(pm->f);
    free(pm->line);
    memset(pm, 0, sizeof(*pm));
}
