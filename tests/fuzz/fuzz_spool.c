/* libFuzzer target: spool recovery (agent/delivery/spool_recover.c) on an
 * arbitrary segment file. The input becomes the one segment of a spool
 * directory (epoch 1, first seq 1); spool_open scans it, keeps the records
 * whose framing and checksum hold and counts the rest; every record it
 * offers must then read back, and appending after recovery must work. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "agent/delivery/spool.h"
#include "fuzz_util.h"

static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];

    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[512], path[1024], name[64];
    struct spool_options o = {.cap_bytes = 64 << 20, .fsync = SPOOL_FSYNC_SEGMENT};
    struct spool *s;
    uint64_t after = 0, seq;
    const void *rec;
    size_t len, n = 0;

    snprintf(dir, sizeof(dir), "%s/spool", fuzz_dir());
    mkdir(dir, 0700);
    clear_dir(dir);
    snprintf(name, sizeof(name), "spool/seg-%016x-%016x.log", 1, 1);
    fuzz_write(name, data, size, path, sizeof(path));
    if (spool_open(dir, &o, &s) < 0)
        return 0;
    while (spool_read(s, after, &seq, &rec, &len) == 1) {
        if (seq <= after || (len && !rec))
            abort();
        after = seq;
        if (++n > size)
            abort(); /* more records than bytes: the scan loops */
    }
    if (spool_append(s, "x", 1, &seq) < 0)
        abort();
    spool_close(s);
    return 0;
}
