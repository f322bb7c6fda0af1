/* What the store's tests share (test_store, test_store_read,
 * test_store_retention): batches of synthetic step records, a store opened in
 * a temporary directory per test, scan collectors, and small readers of what
 * the store holds. Everything is static inline: each test binary takes what
 * it uses.
 */
#ifndef ARGUS_TESTS_STORE_FIXTURE_H
#define ARGUS_TESTS_STORE_FIXTURE_H

#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/store/store.h"
#include "common/clock.h"

#define T0 (UINT64_C(1796000000) * NSEC_PER_SEC) /* some UNIX second in 2026 */

/* ---- batches ------------------------------------------------------------ */

struct tbatch {
    Argus__V1__Batch b;
    Argus__V1__StepRecord *steps;
    Argus__V1__StepRecord **step_ptrs;
    Argus__V1__Phase *phases, **phase_ptrs;
    Argus__V1__Resource *res, **res_ptrs;
    Argus__V1__NameEntry *names, **name_ptrs;
    char *agent, *job;
};

/* ranks x steps records of job, steps from first_step, step k starting at
 * start_ns + k seconds; one Resource per rank; two names. */
static inline struct tbatch *tbatch_new(const char *agent, uint64_t seq, const char *job,
                                        uint32_t first_rank, uint32_t ranks, uint64_t first_step,
                                        uint32_t steps, uint64_t start_ns)
{
    struct tbatch *t = calloc(1, sizeof(*t));
    size_t n = (size_t)ranks * steps;

    argus__v1__batch__init(&t->b);
    t->agent = strdup(agent);
    t->job = strdup(job);
    t->b.agent_id = t->agent;
    t->b.epoch = 7;
    t->b.seq = seq;
    t->steps = calloc(n + 1, sizeof(*t->steps));
    t->step_ptrs = calloc(n + 1, sizeof(*t->step_ptrs));
    t->phases = calloc(2 * n + 1, sizeof(*t->phases));
    t->phase_ptrs = calloc(2 * n + 1, sizeof(*t->phase_ptrs));
    for (uint32_t k = 0; k < steps; k++) {
        for (uint32_t r = 0; r < ranks; r++) {
            size_t i = (size_t)k * ranks + r;
            Argus__V1__StepRecord *s = &t->steps[i];

            argus__v1__step_record__init(s);
            s->job = t->job;
            s->rank = first_rank + r;
            s->step = first_step + k;
            s->start_unix_ns = start_ns + k * NSEC_PER_SEC + r * 1000;
            s->duration_ns = 500 * NSEC_PER_MSEC + r * 7 + k;
            for (int p = 0; p < 2; p++) {
                argus__v1__phase__init(&t->phases[2 * i + p]);
                t->phases[2 * i + p].name_id = 100 + p;
                t->phases[2 * i + p].duration_ns = 1000 * (p + 1) + i;
                t->phase_ptrs[2 * i + p] = &t->phases[2 * i + p];
            }
            s->n_phases = 2;
            s->phases = &t->phase_ptrs[2 * i];
            s->kernel_events = i;
            t->step_ptrs[i] = s;
        }
    }
    t->b.n_steps = n;
    t->b.steps = t->step_ptrs;
    t->res = calloc(ranks + 1, sizeof(*t->res));
    t->res_ptrs = calloc(ranks + 1, sizeof(*t->res_ptrs));
    for (uint32_t r = 0; r < ranks; r++) {
        argus__v1__resource__init(&t->res[r]);
        t->res[r].job = t->job;
        t->res[r].rank = first_rank + r;
        t->res[r].world_size = 16 + r % 2;
        t->res[r].node = "node-a";
        t->res_ptrs[r] = &t->res[r];
    }
    t->b.n_resources = ranks;
    t->b.resources = t->res_ptrs;
    t->names = calloc(2, sizeof(*t->names));
    t->name_ptrs = calloc(2, sizeof(*t->name_ptrs));
    for (int i = 0; i < 2; i++) {
        argus__v1__name_entry__init(&t->names[i]);
        t->names[i].job = t->job;
        t->names[i].id = 100 + i;
        t->names[i].name = i ? "backward" : "forward";
        t->name_ptrs[i] = &t->names[i];
    }
    t->b.n_names = 2;
    t->b.names = t->name_ptrs;
    return t;
}

static inline void tbatch_free(struct tbatch *t)
{
    free(t->steps);
    free(t->step_ptrs);
    free(t->phases);
    free(t->phase_ptrs);
    free(t->res);
    free(t->res_ptrs);
    free(t->names);
    free(t->name_ptrs);
    free(t->agent);
    free(t->job);
    free(t);
}

/* ---- fixture -------------------------------------------------------------- */

struct fix {
    char dir[64];
    struct store *s;
    struct store_options o;
};

static inline int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static inline void rm_tree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline struct store *open_store(struct fix *f)
{
    char err[256] = "";
    struct store *s = NULL;

    f->o.dir = f->dir;
    assert_int_equal(store_open(&f->o, &s, err, sizeof(err)), 0);
    assert_non_null(s);
    return s;
}

static inline int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));

    strcpy(f->dir, "/tmp/argus-store-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    f->s = open_store(f);
    *state = f;
    return 0;
}

static inline int teardown(void **state)
{
    struct fix *f = *state;

    store_close(f->s);
    umount2(f->dir, MNT_DETACH); /* only mounted by the disk-full test */
    rm_tree(f->dir);
    free(f);
    return 0;
}

/* Close f's store and mount a tmpfs of opts ("size=8m") on its directory;
 * skips the test (saying why, for what) without root or a tmpfs. The caller
 * opens the store again (open_store). */
static inline void fix_on_tmpfs(struct fix *f, const char *opts, const char *what)
{
    if (getuid() != 0) {
        printf("skip: %s needs root to mount a tmpfs\n", what);
        skip();
    }
    store_close(f->s);
    f->s = NULL;
    if (mount("tmpfs", f->dir, "tmpfs", 0, opts) != 0) {
        printf("skip: cannot mount a tmpfs on %s: %s\n", f->dir, strerror(errno));
        skip();
    }
}

/* ---- scan collectors ---------------------------------------------------------- */

struct got {
    size_t n;
    uint8_t *bytes[512];
    size_t len[512];
    int stop_after;
};

/* No cmocka assert in here: jumping out of a scan would leak its iterator. */
static inline int collect(void *ctx, const void *v, size_t len)
{
    struct got *g = ctx;

    if (g->n >= 512)
        return -ENOSPC;
    g->bytes[g->n] = malloc(len + 1);
    memcpy(g->bytes[g->n], v, len);
    g->len[g->n++] = len;
    return g->stop_after && (int)g->n >= g->stop_after;
}

static inline void got_free(struct got *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->bytes[i]);
    memset(g, 0, sizeof(*g));
}

static inline void assert_same_step(const struct got *g, size_t i,
                                    const Argus__V1__StepRecord *want)
{
    size_t n = argus__v1__step_record__get_packed_size(want);
    uint8_t *buf = malloc(n + 1);

    argus__v1__step_record__pack(want, buf);
    assert_int_equal(g->len[i], n);
    assert_memory_equal(g->bytes[i], buf, n);
    free(buf);
}

static inline Argus__V1__JobInfo *job_info(struct store *s, const char *job)
{
    struct got g = {0};
    Argus__V1__JobInfo *found = NULL;

    assert_int_equal(store_scan_jobs(s, collect, &g), 0);
    for (size_t i = 0; i < g.n && !found; i++) {
        Argus__V1__JobInfo *ji = argus__v1__job_info__unpack(NULL, g.len[i], g.bytes[i]);
        assert_non_null(ji);
        if (!strcmp(ji->job, job))
            found = ji;
        else
            argus__v1__job_info__free_unpacked(ji, NULL);
    }
    got_free(&g);
    return found;
}

/* ---- reports, the time index, counts ------------------------------------------- */

/* JobInfo.rank_steps of job, or UINT64_MAX when it has none. */
static inline uint64_t job_info_rank_steps(struct store *s, const char *job)
{
    Argus__V1__JobInfo *ji = job_info(s, job);
    uint64_t n = ji ? ji->rank_steps : UINT64_MAX;

    if (ji)
        argus__v1__job_info__free_unpacked(ji, NULL);
    return n;
}

static inline void put_report(struct store *s, const char *id, const char *job, uint64_t created)
{
    Argus__V1__Report r = ARGUS__V1__REPORT__INIT;
    char err[256];

    r.id = (char *)id;
    r.job = (char *)job;
    r.created_unix_ns = created;
    r.summary = "rank 3 is slow";
    assert_int_equal(store_put_report(s, &r, err, sizeof(err)), 0);
}

struct time_hit {
    char job[32];
    uint64_t lo, hi;
};

struct time_got {
    size_t n;
    struct time_hit h[8];
};

static inline int time_cb(void *ctx, const char *job, uint64_t lo, uint64_t hi)
{
    struct time_got *t = ctx;

    if (t->n >= 8)
        return -ENOSPC;
    snprintf(t->h[t->n].job, sizeof(t->h[t->n].job), "%s", job);
    t->h[t->n].lo = lo;
    t->h[t->n++].hi = hi;
    return 0;
}

static inline int count_one(void *ctx, const void *v, size_t len)
{
    ++*(size_t *)ctx;
    return 0;
}

static inline size_t count_steps(struct store *s, const char *job)
{
    size_t n = 0;

    assert_int_equal(store_scan_steps(s, job, -1, 0, 0, count_one, &n), 0);
    return n;
}

#endif
