/* Small readers of /proc for the process table (see procfs.h). */
#include "agent/discovery/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t procfs_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* Read up to cap bytes of a file. Returns bytes read or -errno; a vanished
 * process reads as -ENOENT (ESRCH is folded into it). */
ssize_t procfs_read_file(const char *path, char *buf, size_t cap)
{
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ESRCH ? -ENOENT : -errno;
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno == ESRCH ? -ENOENT : -errno;
            close(fd);
            return err;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return (ssize_t)got;
}

/* /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ...". comm may
 * hold spaces and ')': it ends at the last ')'. */
int procfs_read_stat(const char *proc_root, uint32_t pid, struct proc_stat *st)
{
    char path[PROCFS_ROOT_MAX + 32], buf[1024], *end;
    snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
    ssize_t n = procfs_read_file(path, buf, sizeof(buf) - 1);
    if (n < 0)
        return (int)n;
    buf[n] = '\0';
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren || close_paren[1] != ' ')
        return -EINVAL;
    size_t clen = (size_t)(close_paren - open_paren - 1);
    clen = clen < DISCOVERY_COMM_MAX ? clen : DISCOVERY_COMM_MAX - 1;
    memcpy(st->comm, open_paren + 1, clen);
    st->comm[clen] = '\0';
    st->state = close_paren[2];
    char *p = close_paren + 3;
    for (int field = 4; field <= 22; field++) {
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno)
            return -EINVAL;
        if (field == 4)
            st->ppid = (uint32_t)v;
        if (field == 9)
            st->flags = (uint32_t)v;
        if (field == 22)
            st->start_time = v;
        p = end;
    }
    return 0;
}

bool procfs_parse_pid(const char *name, uint32_t *pid)
{
    uint64_t v = 0;
    if (!name[0] || strlen(name) > 10)
        return false;
    for (const char *p = name; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *pid = (uint32_t)v;
    return v > 0 && v <= UINT32_MAX;
}

bool procfs_same_netns(const char *proc_root, uint32_t pid, const struct stat *own)
{
    char path[PROCFS_ROOT_MAX + 32];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%u/ns/net", proc_root, pid);
    return stat(path, &sb) == 0 && sb.st_dev == own->st_dev && sb.st_ino == own->st_ino;
}
