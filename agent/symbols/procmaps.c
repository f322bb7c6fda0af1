/* The /proc/PID/maps reader (see procmaps.h). */
#include "agent/symbols/procmaps.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define PROCMAPS_DELETED " (deleted)"

/* Parsers of one field: advance *p past it; false when there is none. A
 * torch process maps a few thousand regions and its maps are read again as
 * libraries load: sscanf was most of the agent's CPU under such a job. */
static bool pm_number(const char **p, unsigned base, unsigned long long *v)
{
    const char *s = *p;
    unsigned long long x = 0;

    for (;; s++) {
        unsigned c = (unsigned char)*s, d;

        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (base == 16 && (c | 32) >= 'a' && (c | 32) <= 'f')
            d = (c | 32) - 'a' + 10;
        else
            break;
        if (x > (ULLONG_MAX - d) / base)
            return false;
        x = x * base + d;
    }
    if (s == *p)
        return false;
    *p = s;
    *v = x;
    return true;
}

static bool pm_char(const char **p, char c)
{
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

int procmaps_parse_line(const char *line, struct procmaps_entry *e)
{
    unsigned long long start, end, off, major, minor, inode;
    size_t suffix = strlen(PROCMAPS_DELETED), n = 0;
    const char *p = line;

    memset(e, 0, sizeof(*e));
    if (!pm_number(&p, 16, &start) || !pm_char(&p, '-') || !pm_number(&p, 16, &end) ||
        !pm_char(&p, ' ') || end < start)
        return -EINVAL;
    while (n < sizeof(e->perms) - 1 && *p && *p != ' ' && *p != '\n')
        e->perms[n++] = *p++;
    if (!n || !pm_char(&p, ' ') || !pm_number(&p, 16, &off))
        return -EINVAL;
    e->start = start;
    e->end = end;
    e->file_offset = off;
    if (!pm_char(&p, ' ') || !pm_number(&p, 16, &major) || !pm_char(&p, ':') ||
        !pm_number(&p, 16, &minor) || !pm_char(&p, ' ') || !pm_number(&p, 10, &inode))
        return 0; /* the device, inode and path are optional */
    e->dev = major << 32 | (minor & 0xffffffffu);
    e->inode = inode;
    while (*p == ' ' || *p == '\t')
        p++;
    n = strcspn(p, "\n");
    e->deleted = n >= suffix && memcmp(p + n - suffix, PROCMAPS_DELETED, suffix) == 0;
    if (n >= sizeof(e->path))
        n = sizeof(e->path) - 1;
    memcpy(e->path, p, n);
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
