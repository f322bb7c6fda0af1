#include "agent/delivery/dropstate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/daemon.h"

#define DROPSTATE_MAGIC "argus-drops"
#define DROPSTATE_VERSION 1

struct save_ctx {
    FILE *f;
    const char *const *skip;
    bool failed;
};

static bool skipped(const char *const *skip, const char *reason)
{
    for (; skip && *skip; skip++)
        if (strcmp(*skip, reason) == 0)
            return true;
    return false;
}

/* Reasons and jobs with a tab or a newline cannot be written back; they do
 * not occur (reasons are identifiers, jobs come from the environment). */
static bool writable(const char *s)
{
    return s && !strpbrk(s, "\t\n") && *s;
}

static void save_one(void *ctx, const char *reason, const char *job, int32_t rank, uint64_t total)
{
    struct save_ctx *c = ctx;

    if (skipped(c->skip, reason) || !writable(reason) || (job && !writable(job)))
        return;
    if (fprintf(c->f, "%" PRIu64 "\t%" PRId32 "\t%s\t%s\n", total, rank, reason, job ? job : "-") <
        0)
        c->failed = true;
}

int dropstate_save(const char *dir, uint64_t epoch, const struct drops *d, const char *const *skip)
{
    struct save_ctx c = {.skip = skip};
    char *text = NULL;
    size_t len = 0;
    int err;

    c.f = open_memstream(&text, &len);
    if (!c.f)
        return -ENOMEM;
    fprintf(c.f, "%s %d %" PRIu64 "\n", DROPSTATE_MAGIC, DROPSTATE_VERSION, epoch);
    drops_foreach(d, save_one, &c);
    err = fclose(c.f) || c.failed ? -ENOMEM : daemon_replace_file(dir, DROPSTATE_FILE, text, len);
    free(text);
    return err;
}

/* One "TOTAL\tRANK\tREASON\tJOB" line into d: 1 loaded, 0 skipped, -1
 * malformed. */
static int load_line(char *line, struct drops *d, const char *const *skip)
{
    char *fields[4], *end, *save = NULL;
    unsigned long long total;
    long rank;
    int n = 0;

    line[strcspn(line, "\n")] = 0;
    for (char *t = strtok_r(line, "\t", &save); t && n < 4; t = strtok_r(NULL, "\t", &save))
        fields[n++] = t;
    if (n != 4 || strtok_r(NULL, "\t", &save))
        return -1;
    errno = 0;
    total = strtoull(fields[0], &end, 10);
    if (errno || *end || fields[0][0] == '-')
        return -1;
    rank = strtol(fields[1], &end, 10);
    if (errno || *end || rank < -1 || rank > INT32_MAX)
        return -1;
    if (skipped(skip, fields[2]))
        return 0;
    drops_add(d, fields[2], strcmp(fields[3], "-") ? fields[3] : NULL, (int32_t)rank, total);
    return 1;
}

int dropstate_load(const char *dir, uint64_t epoch, struct drops *d, const char *const *skip)
{
    char path[4096], line[1024], magic[16];
    int version, loaded = 0, bad = 0;
    uint64_t file_epoch;
    FILE *f;

    if (snprintf(path, sizeof(path), "%s/%s", dir, DROPSTATE_FILE) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    if (!fgets(line, sizeof(line), f) ||
        sscanf(line, "%15s %d %" SCNu64, magic, &version, &file_epoch) != 3 ||
        strcmp(magic, DROPSTATE_MAGIC) || version != DROPSTATE_VERSION) {
        fclose(f);
        return -EBADMSG;
    }
    while (file_epoch == epoch && fgets(line, sizeof(line), f)) {
        int r = load_line(line, d, skip);

        loaded += r > 0;
        bad += r < 0;
    }
    fclose(f);
    return loaded == 0 && bad ? -EBADMSG : loaded;
}
