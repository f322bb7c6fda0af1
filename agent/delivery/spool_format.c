/* The spool's meta file, reads and index (spool_format.h). */
#include "agent/delivery/spool_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/daemon.h"

ssize_t spool_format_pread(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;

    while (got < len) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return spool_neg_errno();
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int spool_format_meta_read(int dirfd, struct spool_meta *m)
{
    uint8_t buf[META_SIZE + 1];
    uint32_t magic, version, crc;
    int fd = openat(dirfd, "meta", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return spool_neg_errno();
    n = spool_format_pread(fd, buf, sizeof(buf), 0);
    close(fd);
    if (n != (ssize_t)META_SIZE)
        return n < 0 ? (int)n : -EBADMSG;
    memcpy(&magic, buf, 4);
    memcpy(&version, buf + 4, 4);
    memcpy(&crc, buf + META_SIZE - 4, 4);
    if (magic != META_MAGIC || version != META_VERSION || crc != crc32c(0, buf, META_SIZE - 4))
        return -EBADMSG;
    memcpy(m, buf + 8, sizeof(*m));
    return m->epoch ? 0 : -EBADMSG;
}

int spool_format_meta_write(int dirfd, const struct spool_meta *m, uint64_t *fsyncs,
                            uint64_t *fsync_errors)
{
    uint8_t buf[META_SIZE];
    uint32_t magic = META_MAGIC, version = META_VERSION, crc;

    memcpy(buf, &magic, 4);
    memcpy(buf + 4, &version, 4);
    memcpy(buf + 8, m, sizeof(*m));
    crc = crc32c(0, buf, META_SIZE - 4);
    memcpy(buf + META_SIZE - 4, &crc, 4);
    return daemon_replace_file_at(dirfd, "meta", buf, sizeof(buf), fsyncs, fsync_errors);
}

bool spool_format_damage_remember(struct spool_meta *m, uint64_t seq)
{
    size_t low = 0;

    for (size_t i = 0; i < COUNTED; i++) {
        if (m->counted[i] == seq)
            return false;
        if (m->counted[i] < m->counted[low])
            low = i;
    }
    m->counted[low] = seq;
    return true;
}

int spool_index_push(struct spool_index *ix, uint64_t epoch, uint64_t first)
{
    if (ix->nseg == ix->segcap) {
        size_t cap = ix->segcap ? ix->segcap * 2 : 16;
        struct spool_segment *tmp = realloc(ix->seg, cap * sizeof(*tmp));
        if (!tmp)
            return -ENOMEM;
        ix->seg = tmp;
        ix->segcap = cap;
    }
    ix->seg[ix->nseg++] = (struct spool_segment){.epoch = epoch, .first_seq = first};
    return 0;
}

int spool_index_reserve(struct spool_segment *g)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        struct spool_entry *tmp = realloc(g->e, cap * sizeof(*tmp));
        if (!tmp)
            return -ENOMEM;
        g->e = tmp;
        g->cap = cap;
    }
    return 0;
}

void spool_index_delete(struct spool_index *ix, int dirfd, size_t i)
{
    struct spool_segment *g = &ix->seg[i];
    char name[SEG_NAME_LEN + 1];

    spool_segment_name(name, g);
    unlinkat(dirfd, name, 0);
    free(g->e);
    memmove(g, g + 1, (ix->nseg - i - 1) * sizeof(*g));
    ix->nseg--;
}

void spool_index_free(struct spool_index *ix)
{
    for (size_t i = 0; i < ix->nseg; i++)
        free(ix->seg[i].e);
    free(ix->seg);
    *ix = (struct spool_index){0};
}
