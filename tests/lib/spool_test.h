/* What the spool's two test binaries share (test_spool.c: the live spool;
 * test_spool_recover.c: what spool_open finds after crashes and damage): a
 * temporary directory per test, records whose payload depends on their seq,
 * and readers that check every payload. Include after <cmocka.h>. */
#ifndef ARGUS_TESTS_SPOOL_TEST_H
#define ARGUS_TESTS_SPOOL_TEST_H

#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/spool.h"

#define HDR 20 /* record header bytes on disk */

struct fixture {
    char dir[64];
};

static inline int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static inline int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    snprintf(f->dir, sizeof(f->dir), "/tmp/test_spool.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static inline int teardown(void **state)
{
    struct fixture *f = *state;

    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* The payload of seq: its length and bytes both depend on seq. */
static inline size_t payload(uint64_t seq, size_t len, uint8_t *buf)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 8));
    return len;
}

static inline void append_n(struct spool *s, uint64_t n, size_t len)
{
    uint8_t *buf = malloc(len);

    for (uint64_t i = 0; i < n; i++) {
        uint64_t want = spool_next_seq(s), seq = 0;
        payload(want, len, buf);
        assert_int_equal(spool_append(s, buf, len, &seq), 0);
        assert_int_equal(seq, want);
    }
    free(buf);
}

/* Read every record after `after`, checking payloads; returns the count and
 * stores the seqs in seqs (when not NULL). */
static inline size_t read_all(struct spool *s, uint64_t after, size_t len, uint64_t *seqs,
                              size_t max)
{
    uint8_t *want = malloc(len ? len : 1);
    uint64_t seq, prev = after;
    const void *data;
    size_t n = 0, got;

    while (spool_read(s, prev, &seq, &data, &got) == 1) {
        assert_true(seq > prev);
        if (len) {
            assert_int_equal(got, len);
            payload(seq, len, want);
            assert_memory_equal(data, want, len);
        }
        if (seqs && n < max)
            seqs[n] = seq;
        n++;
        prev = seq;
    }
    free(want);
    return n;
}

static inline struct spool *open_ok(const char *dir, const struct spool_options *o)
{
    struct spool *s = NULL;

    assert_int_equal(spool_open(dir, o, &s), 0);
    assert_non_null(s);
    return s;
}

static inline struct spool_stats stats_of(struct spool *s)
{
    struct spool_stats st;

    spool_stats(s, &st);
    return st;
}

/* Sorted segment file names of dir; returns the count. */
static inline int seg_files(const char *dir, char names[][128], int max)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    assert_non_null(d);
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "seg-", 4) && n < max)
            snprintf(names[n++], 128, "%s/%s", dir, de->d_name);
    closedir(d);
    qsort(names, (size_t)n, 128, (int (*)(const void *, const void *))strcmp);
    return n;
}

static inline off_t file_size(const char *path)
{
    struct stat sb;

    assert_int_equal(stat(path, &sb), 0);
    return sb.st_size;
}

/* spool_options.on_loss into a drop table (ctx), as the agent wires it. */
static inline void loss_to_drops(void *ctx, const char *reason, uint64_t count)
{
    drops_add(ctx, reason, NULL, -1, count);
}

#endif
