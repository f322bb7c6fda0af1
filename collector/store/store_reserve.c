/* The store's reserve file: see store_reserve.h. */
#include "collector/store/store_reserve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"

#define MIB(x) ((double)(x) / 1048576.0)

int store_disk_usage(const char *dir, uint64_t *free_bytes, uint64_t *total_bytes)
{
    struct statvfs v;

    if (statvfs(dir, &v) < 0)
        return -errno;
    *free_bytes = (uint64_t)(geteuid() == 0 ? v.f_bfree : v.f_bavail) * v.f_frsize;
    *total_bytes = (uint64_t)v.f_blocks * v.f_frsize;
    return 0;
}

bool store_is_nospace(const char *msg)
{
    return msg && (strstr(msg, "No space left") || strstr(msg, "NoSpace") ||
                   strstr(msg, "no space") || strstr(msg, "ENOSPC"));
}

static uint64_t free_now(const struct store_reserve *r)
{
    uint64_t f = 0, t = 0;

    return store_disk_usage(r->dir, &f, &t) == 0 ? f : UINT64_MAX;
}

/* Allocate the file to want bytes (fallocate; zeros where the filesystem
 * has none). 0 or -errno; a partial file is removed. */
static int reserve_make(struct store_reserve *r)
{
    static const char zeros[65536];
    int fd = open(r->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    int rc = 0;

    if (fd < 0)
        return -errno;
    rc = posix_fallocate(fd, 0, (off_t)r->want);
    if (rc == EOPNOTSUPP || rc == EINVAL) {
        rc = 0;
        for (uint64_t off = 0; rc == 0 && off < r->want; off += sizeof(zeros))
            if (pwrite(fd, zeros, sizeof(zeros), (off_t)off) != (ssize_t)sizeof(zeros))
                rc = errno ? errno : EIO;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = errno;
    close(fd);
    if (rc) {
        unlink(r->path);
        return -rc;
    }
    r->held = r->want;
    return 0;
}

/* Take the reserve when 2 x want is free (an existing file counts as its
 * share). 1 taken, 0 no room, -errno. */
static int reserve_take(struct store_reserve *r)
{
    struct stat st;
    uint64_t have = stat(r->path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
    uint64_t f = free_now(r);

    if (have >= r->want) {
        if (have > r->want && truncate(r->path, (off_t)r->want) == 0)
            have = r->want; /* the configured size went down */
        r->held = have;
        return 1;
    }
    if (f == UINT64_MAX || f + have < 2 * r->want)
        return 0;
    return reserve_make(r) < 0 ? -EIO : 1;
}

int store_reserve_init(struct store_reserve *r, const char *dir, uint64_t want)
{
    int rc;

    *r = (struct store_reserve){.want = want};
    r->dir = strdup(dir);
    if (!r->dir || asprintf(&r->path, "%s/reserve", dir) < 0) {
        r->path = NULL;
        return -ENOMEM;
    }
    if (!want) {
        unlink(r->path); /* a reserve an earlier configuration left */
        return 0;
    }
    if (mkdir(dir, 0750) < 0 && errno != EEXIST)
        log_warn("store", "cannot create %s for the reserve: %s", dir, strerror(errno));
    rc = reserve_take(r);
    if (rc == 1)
        log_info("store", "reserve %s holds %.1f MiB of headroom for a full disk", r->path,
                 MIB(r->held));
    else
        log_warn("store",
                 "no reserve in %s: %.1f MiB free, %.1f MiB needed (%s); taken when "
                 "space returns",
                 dir, MIB(free_now(r)), MIB(2 * want), rc < 0 ? "cannot allocate" : "no room");
    return 0;
}

void store_reserve_fini(struct store_reserve *r)
{
    free(r->path);
    free(r->dir);
    r->path = r->dir = NULL;
}

bool store_reserve_release(struct store_reserve *r, const char *why)
{
    if (!r->held)
        return false;
    if (unlink(r->path) < 0 && errno != ENOENT) {
        log_error("store", "cannot release the reserve %s: %s", r->path, strerror(errno));
        return false;
    }
    log_warn("store",
             "disk full: released the reserve %s (%.1f MiB) after %s; ingest is refused until "
             "%.1f MiB is free again for %.0f s, queries go on",
             r->path, MIB(r->held), why, MIB(2 * r->want), (double)STORE_RESERVE_SETTLE_NS / 1e9);
    r->held = 0;
    r->released++;
    r->roomy_since = 0;
    return true;
}

int store_reserve_tick(struct store_reserve *r, uint64_t now_ns)
{
    uint64_t f;

    if (!r->want || r->held)
        return 0;
    f = free_now(r);
    if (f == UINT64_MAX || f < 2 * r->want) {
        r->roomy_since = 0;
        return 0;
    }
    if (!r->roomy_since)
        r->roomy_since = now_ns;
    if (now_ns - r->roomy_since < STORE_RESERVE_SETTLE_NS)
        return 0;
    r->roomy_since = 0;
    if (reserve_take(r) != 1)
        return 0;
    log_info("store", "space returned (%.1f MiB free): took the reserve %s back (%.1f MiB)", MIB(f),
             r->path, MIB(r->held));
    return 1;
}

bool store_reserve_short(const struct store_reserve *r)
{
    return r->want && !r->held;
}
