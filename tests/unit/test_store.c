/* The RocksDB store, for real, in a temporary directory: ingest and every scan,
 * dedup, reopen, names, reports, the time index, retention, a full disk and
 * two ingesting threads. */
#include <errno.h>
#include <inttypes.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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
static struct tbatch *tbatch_new(const char *agent, uint64_t seq, const char *job,
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

static void tbatch_free(struct tbatch *t)
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

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void rm_tree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct store *open_store(struct fix *f)
{
    char err[256] = "";
    struct store *s = NULL;

    f->o.dir = f->dir;
    assert_int_equal(store_open(&f->o, &s, err, sizeof(err)), 0);
    assert_non_null(s);
    return s;
}

static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));

    strcpy(f->dir, "/tmp/argus-store-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    f->s = open_store(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fix *f = *state;

    store_close(f->s);
    umount2(f->dir, MNT_DETACH); /* only mounted by the disk-full test */
    rm_tree(f->dir);
    free(f);
    return 0;
}

/* ---- scan collectors ---------------------------------------------------------- */

struct got {
    size_t n;
    uint8_t *bytes[512];
    size_t len[512];
    int stop_after;
};

/* No cmocka assert in here: jumping out of a scan would leak its iterator. */
static int collect(void *ctx, const void *v, size_t len)
{
    struct got *g = ctx;

    if (g->n >= 512)
        return -ENOSPC;
    g->bytes[g->n] = malloc(len + 1);
    memcpy(g->bytes[g->n], v, len);
    g->len[g->n++] = len;
    return g->stop_after && (int)g->n >= g->stop_after;
}

static void got_free(struct got *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->bytes[i]);
    memset(g, 0, sizeof(*g));
}

static void assert_same_step(const struct got *g, size_t i, const Argus__V1__StepRecord *want)
{
    size_t n = argus__v1__step_record__get_packed_size(want);
    uint8_t *buf = malloc(n + 1);

    argus__v1__step_record__pack(want, buf);
    assert_int_equal(g->len[i], n);
    assert_memory_equal(g->bytes[i], buf, n);
    free(buf);
}

static Argus__V1__JobInfo *job_info(struct store *s, const char *job)
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

/* ---- tests -------------------------------------------------------------------------- */

static void test_ingest_and_scan(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-a", 0, 4, 10, 5, T0);
    struct store_stats st;
    struct got g = {0};
    char err[256] = "";

    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    /* all ranks: ordered by (step, rank), identical bytes */
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 20);
    for (size_t i = 0; i < 20; i++)
        assert_same_step(&g, i, t->step_ptrs[i]);
    got_free(&g);
    /* a step window of one rank */
    assert_int_equal(store_scan_steps(f->s, "job-a", 2, 11, 13, collect, &g), 0);
    assert_int_equal(g.n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_same_step(&g, i, t->step_ptrs[(1 + i) * 4 + 2]);
    got_free(&g);
    /* a window of all ranks, and a rank that does not exist */
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 12, 12, collect, &g), 0);
    assert_int_equal(g.n, 4);
    assert_same_step(&g, 0, t->step_ptrs[8]);
    got_free(&g);
    assert_int_equal(store_scan_steps(f->s, "job-a", 9, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 0);
    /* a job whose id is a prefix of this one sees nothing */
    assert_int_equal(store_scan_steps(f->s, "job-", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 0);
    /* stop early */
    g.stop_after = 2;
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 2);
    got_free(&g);
    /* ranks, by rank */
    assert_int_equal(store_scan_ranks(f->s, "job-a", collect, &g), 0);
    assert_int_equal(g.n, 4);
    for (size_t i = 0; i < 4; i++) {
        Argus__V1__Resource *r = argus__v1__resource__unpack(NULL, g.len[i], g.bytes[i]);
        assert_non_null(r);
        assert_int_equal(r->rank, i);
        assert_string_equal(r->node, "node-a");
        argus__v1__resource__free_unpacked(r, NULL);
    }
    got_free(&g);
    /* JobInfo */
    Argus__V1__JobInfo *ji = job_info(f->s, "job-a");
    assert_non_null(ji);
    assert_int_equal(ji->rank_steps, 20);
    assert_int_equal(ji->ranks_seen, 4);
    assert_int_equal(ji->world_size, 17);
    assert_int_equal(ji->last_step, 14);
    assert_int_equal(ji->first_seen_unix_ns, T0);
    assert_int_equal(ji->last_seen_unix_ns, T0 + 4 * NSEC_PER_SEC + 3000);
    argus__v1__job_info__free_unpacked(ji, NULL);
    /* flushed and compacted, the same records are read from SST files */
    assert_int_equal(store_compact(f->s), 0);
    store_get_stats(f->s, &st);
    assert_true(st.live_sst_bytes > 0);
    assert_int_equal(store_scan_steps(f->s, "job-a", 3, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 5);
    assert_same_step(&g, 4, t->step_ptrs[4 * 4 + 3]);
    got_free(&g);
    tbatch_free(t);
}

static void test_duplicate_and_gaps(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-a", 0, 2, 0, 3, T0);
    struct store_stats st;
    char err[256];
    uint64_t hwm;

    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_DUPLICATE);
    t->b.seq = 5; /* a gap: the agent dropped 2..4 */
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    t->b.seq = 3;
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_DUPLICATE);
    t->b.epoch = 8; /* a new epoch starts over */
    t->b.seq = 1;
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, 5);
    assert_int_equal(store_high_water(f->s, "agent-1", 8, &hwm), 0);
    assert_int_equal(hwm, 1);
    assert_int_equal(store_high_water(f->s, "agent-2", 7, &hwm), 0);
    assert_int_equal(hwm, 0);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-a");
    assert_int_equal(ji->rank_steps, 18); /* three written batches of 6 */
    assert_int_equal(ji->ranks_seen, 2);
    argus__v1__job_info__free_unpacked(ji, NULL);
    store_get_stats(f->s, &st);
    assert_int_equal(st.write_batches, 3);
    assert_int_equal(st.duplicates, 2);
    assert_int_equal(st.write_errors, 0);
    assert_true(st.write_ns_total >= st.write_ns_max && st.write_ns_max > 0);
    tbatch_free(t);
}

static void test_reopen_keeps_everything(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 4, "job-a", 0, 3, 0, 2, T0);
    struct got g = {0};
    char err[256], *name;
    uint64_t hwm;

    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    store_close(f->s);
    f->o.block_cache_bytes = 8 << 20;
    f->s = open_store(f);
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, 4);
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_DUPLICATE);
    /* same ranks again after the reopen: ranks_seen comes from the loaded cache */
    t->b.seq = 5;
    for (size_t i = 0; i < t->b.n_steps; i++)
        t->steps[i].step += 2;
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-a");
    assert_int_equal(ji->ranks_seen, 3);
    assert_int_equal(ji->rank_steps, 12);
    assert_int_equal(ji->last_step, 3);
    assert_int_equal(ji->first_seen_unix_ns, T0);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 12);
    got_free(&g);
    name = store_get_name(f->s, "job-a", 101);
    assert_string_equal(name, "backward");
    free(name);
    tbatch_free(t);
}

static void test_locked_dir(void **state)
{
    struct fix *f = *state;
    struct store *s2 = (struct store *)1;
    char err[256] = "";

    assert_int_equal(store_open(&f->o, &s2, err, sizeof(err)), -EBUSY);
    assert_null(s2);
    assert_non_null(strstr(err, f->dir));
}

static void test_names(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-a", 0, 1, 0, 1, T0);
    char err[256], *name;

    t->names[1].name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    name = store_get_name(f->s, "job-a", 100);
    assert_string_equal(name, "forward");
    free(name);
    name = store_get_name(f->s, "job-a", 101);
    assert_string_equal(name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    free(name);
    assert_null(store_get_name(f->s, "job-a", 102));
    assert_null(store_get_name(f->s, "job-b", 100));
    tbatch_free(t);
}

static void put_report(struct store *s, const char *id, const char *job, uint64_t created)
{
    Argus__V1__Report r = ARGUS__V1__REPORT__INIT;
    char err[256];

    r.id = (char *)id;
    r.job = (char *)job;
    r.created_unix_ns = created;
    r.summary = "rank 3 is slow";
    assert_int_equal(store_put_report(s, &r, err, sizeof(err)), 0);
}

static uint64_t report_created(const struct got *g, size_t i)
{
    Argus__V1__Report *r = argus__v1__report__unpack(NULL, g->len[i], g->bytes[i]);
    uint64_t c;

    assert_non_null(r);
    c = r->created_unix_ns;
    argus__v1__report__free_unpacked(r, NULL);
    return c;
}

static void test_reports(void **state)
{
    struct fix *f = *state;
    struct got g = {0};

    put_report(f->s, "r3", "job-a", T0 + 30);
    put_report(f->s, "r1", "job-a", T0 + 10);
    put_report(f->s, "r2", "job-a", T0 + 20);
    put_report(f->s, "r9", "job-b", T0 + 15);
    assert_int_equal(store_scan_reports(f->s, "job-a", 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(report_created(&g, 0), T0 + 10);
    assert_int_equal(report_created(&g, 2), T0 + 30);
    got_free(&g);
    assert_int_equal(store_scan_reports(f->s, "job-a", T0 + 15, T0 + 20, collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(report_created(&g, 0), T0 + 20);
    got_free(&g);
    assert_int_equal(store_get_report(f->s, "r9", collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(report_created(&g, 0), T0 + 15);
    got_free(&g);
    assert_int_equal(store_get_report(f->s, "nope", collect, &g), -ENOENT);
    /* the same id put again moves, it is not duplicated */
    put_report(f->s, "r1", "job-a", T0 + 40);
    assert_int_equal(store_scan_reports(f->s, "job-a", 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(report_created(&g, 2), T0 + 40);
    got_free(&g);
}

struct time_hit {
    char job[32];
    uint64_t lo, hi;
};

struct time_got {
    size_t n;
    struct time_hit h[8];
};

static int time_cb(void *ctx, const char *job, uint64_t lo, uint64_t hi)
{
    struct time_got *t = ctx;

    if (t->n >= 8)
        return -ENOSPC;
    snprintf(t->h[t->n].job, sizeof(t->h[t->n].job), "%s", job);
    t->h[t->n].lo = lo;
    t->h[t->n++].hi = hi;
    return 0;
}

static void test_time_index(void **state)
{
    struct fix *f = *state;
    /* job-a steps 0..9 at T0..T0+9 s; job-b steps 100..104 at T0+5..T0+9 s */
    struct tbatch *a = tbatch_new("agent-1", 1, "job-a", 0, 2, 0, 10, T0);
    struct tbatch *b = tbatch_new("agent-2", 1, "job-b", 0, 2, 100, 5, T0 + 5 * NSEC_PER_SEC);
    struct tbatch *a2 = tbatch_new("agent-1", 2, "job-a", 2, 2, 3, 1, T0 + 3 * NSEC_PER_SEC);
    struct time_got t = {0};
    char err[256];

    assert_int_equal(store_ingest(f->s, &a->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &b->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    /* more ranks of step 3, same second: read-modify-write through the cache */
    assert_int_equal(store_ingest(f->s, &a2->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(
        store_scan_time(f->s, T0 + 2 * NSEC_PER_SEC, T0 + 3 * NSEC_PER_SEC, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.h[0].job, "job-a");
    assert_int_equal(t.h[0].lo, 2);
    assert_int_equal(t.h[0].hi, 3);
    t.n = 0;
    assert_int_equal(
        store_scan_time(f->s, T0 + 4 * NSEC_PER_SEC, T0 + 6 * NSEC_PER_SEC, time_cb, &t), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.h[1].job, "job-b");
    assert_int_equal(t.h[0].lo, 4);
    assert_int_equal(t.h[0].hi, 6);
    assert_int_equal(t.h[1].lo, 100);
    assert_int_equal(t.h[1].hi, 101);
    t.n = 0;
    assert_int_equal(store_scan_time(f->s, T0 + 60 * NSEC_PER_SEC, 0, time_cb, &t), 0);
    assert_int_equal(t.n, 0);
    /* after a reopen the cache is cold: the update reads the DB */
    store_close(f->s);
    f->s = open_store(f);
    a2->b.seq = 3;
    for (size_t i = 0; i < a2->b.n_steps; i++)
        a2->steps[i].step = 1; /* step 1 reported again at T0+3 s */
    assert_int_equal(store_ingest(f->s, &a2->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(
        store_scan_time(f->s, T0 + 3 * NSEC_PER_SEC, T0 + 3 * NSEC_PER_SEC, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.h[0].lo, 1);
    assert_int_equal(t.h[0].hi, 3);
    tbatch_free(a);
    tbatch_free(b);
    tbatch_free(a2);
}

static int count_one(void *ctx, const void *v, size_t len)
{
    ++*(size_t *)ctx;
    return 0;
}

static size_t count_steps(struct store *s, const char *job)
{
    size_t n = 0;

    assert_int_equal(store_scan_steps(s, job, -1, 0, 0, count_one, &n), 0);
    return n;
}

static void test_retention(void **state)
{
    struct fix *f = *state;
    const uint64_t hour = 3600 * NSEC_PER_SEC;
    /* job-old: only old steps; job-live: steps 0..4 old, 5..9 new */
    struct tbatch *o = tbatch_new("agent-1", 1, "job-old", 0, 2, 0, 4, T0);
    struct tbatch *l1 = tbatch_new("agent-2", 1, "job-live", 0, 3, 0, 5, T0);
    struct tbatch *l2 = tbatch_new("agent-2", 2, "job-live", 0, 3, 5, 5, T0 + 10 * hour);
    struct got g = {0};
    struct time_got t = {0};
    char err[256], *name;
    int64_t removed;

    store_close(f->s);
    f->o.steps_retention_ns = 24 * hour;
    f->o.reports_retention_ns = 24 * hour;
    f->s = open_store(f);
    assert_int_equal(store_ingest(f->s, &o->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &l1->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &l2->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    put_report(f->s, "old", "job-live", T0 + hour);
    put_report(f->s, "new", "job-live", T0 + 20 * hour);
    /* nothing is old yet */
    assert_int_equal(store_apply_retention(f->s, T0 + 20 * hour), 0);
    assert_int_equal(count_steps(f->s, "job-live"), 30);
    /* cutoff T0 + 5 h: job-old and the first half of job-live go */
    removed = store_apply_retention(f->s, T0 + 29 * hour);
    assert_true(removed > 0);
    assert_int_equal(count_steps(f->s, "job-old"), 0);
    assert_int_equal(store_scan_steps(f->s, "job-live", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 15);
    assert_same_step(&g, 0, l2->step_ptrs[0]);
    got_free(&g);
    assert_null(job_info(f->s, "job-old"));
    Argus__V1__JobInfo *ji = job_info(f->s, "job-live");
    assert_non_null(ji);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_ranks(f->s, "job-old", collect, &g), 0);
    assert_int_equal(g.n, 0);
    assert_int_equal(store_scan_ranks(f->s, "job-live", collect, &g), 0);
    assert_int_equal(g.n, 3);
    got_free(&g);
    assert_null(store_get_name(f->s, "job-old", 100));
    name = store_get_name(f->s, "job-live", 100);
    assert_non_null(name);
    free(name);
    assert_int_equal(store_scan_time(f->s, 0, 0, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.h[0].lo, 5);
    assert_int_equal(store_get_report(f->s, "old", collect, &g), -ENOENT);
    assert_int_equal(store_get_report(f->s, "new", collect, &g), 0);
    got_free(&g);
    /* the job cache forgot job-old: it starts over when it comes back */
    o->b.seq = 2;
    assert_int_equal(store_ingest(f->s, &o->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    ji = job_info(f->s, "job-old");
    assert_int_equal(ji->rank_steps, 8);
    assert_int_equal(ji->ranks_seen, 2);
    argus__v1__job_info__free_unpacked(ji, NULL);
    /* a second run finds nothing more to do but the job that came back */
    assert_int_equal(store_apply_retention(f->s, T0 + 29 * hour) > 0, 1);
    assert_int_equal(store_apply_retention(f->s, T0 + 29 * hour), 0);
    tbatch_free(o);
    tbatch_free(l1);
    tbatch_free(l2);
}

static void test_odd_content(void **state)
{
    struct fix *f = *state;
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT, *rp = &r;
    Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT, *resp = &res;
    Argus__V1__NameEntry ne = ARGUS__V1__NAME_ENTRY__INIT, *nep = &ne;
    struct got g = {0};
    char err[256];

    b.seq = 1; /* empty agent, nothing in it */
    assert_int_equal(store_ingest(f->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    r.job = NULL; /* NULL strings count as "" */
    res.job = NULL;
    ne.job = NULL;
    ne.name = NULL;
    b.seq = 2;
    b.agent_id = NULL;
    b.n_steps = 1;
    b.steps = &rp;
    b.n_resources = 1;
    b.resources = &resp;
    b.n_names = 1;
    b.names = &nep;
    assert_int_equal(store_ingest(f->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_scan_steps(f->s, "", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
    r.step = UINT64_MAX;
    b.seq = 3;
    assert_int_equal(store_ingest(f->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_scan_steps(f->s, "", 0, 5, 0, collect, &g), 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
    assert_int_equal(store_scan_steps(f->s, "", -1, UINT64_MAX, UINT64_MAX, collect, &g), 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
}

struct thread_arg {
    struct store *s;
    int id, errors;
};

static void *ingest_thread(void *p)
{
    struct thread_arg *a = p;
    char agent[16], err[256];

    snprintf(agent, sizeof(agent), "agent-%d", a->id);
    for (int i = 0; i < 50; i++) {
        struct tbatch *t = tbatch_new(agent, (uint64_t)i + 1, "job-mt", (uint32_t)a->id * 4, 4,
                                      (uint64_t)i * 2, 2, T0 + (uint64_t)i * NSEC_PER_SEC);
        if (store_ingest(a->s, &t->b, err, sizeof(err)) != STORE_INGEST_WRITTEN)
            a->errors++;
        tbatch_free(t);
    }
    return NULL;
}

/* Every record a scan returns must unpack. */
static int check_record(void *ctx, const void *v, size_t len)
{
    Argus__V1__StepRecord *r = argus__v1__step_record__unpack(NULL, len, v);

    if (!r || strcmp(r->job, "job-mt") || r->n_phases != 2)
        ++*(int *)ctx;
    if (r)
        argus__v1__step_record__free_unpacked(r, NULL);
    return 0;
}

struct reader_arg {
    struct store *s;
    int *stop;
    int errors, scans;
};

static void *reader_thread(void *p)
{
    struct reader_arg *a = p;

    while (!__atomic_load_n(a->stop, __ATOMIC_RELAXED)) {
        if (store_scan_steps(a->s, "job-mt", -1, 0, 0, check_record, &a->errors))
            a->errors++;
        a->scans++;
    }
    return NULL;
}

static void test_two_threads(void **state)
{
    struct fix *f = *state;
    struct thread_arg a[2] = {{f->s, 0, 0}, {f->s, 1, 0}};
    int stop = 0;
    struct reader_arg ra = {f->s, &stop, 0, 0};
    pthread_t th[2], reader;
    struct got g = {0};
    uint64_t hwm;

    pthread_create(&reader, NULL, reader_thread, &ra);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, ingest_thread, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(reader, NULL);
    assert_int_equal(a[0].errors + a[1].errors, 0);
    assert_int_equal(ra.errors, 0);
    assert_true(ra.scans > 0);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-mt");
    assert_int_equal(ji->rank_steps, 800);
    assert_int_equal(ji->ranks_seen, 8);
    assert_int_equal(ji->last_step, 99);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_steps(f->s, "job-mt", 5, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 100);
    got_free(&g);
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, 50);
}

/* Write kib KiB of zeros to path, or until the disk is full. */
static void fill(const char *path, uint64_t kib)
{
    static const char block[1024];
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    for (uint64_t i = 0; i < kib; i++)
        if (fwrite(block, 1, sizeof(block), fp) != sizeof(block) || fflush(fp))
            break;
    fclose(fp);
}

/* A full disk: -EIO with RocksDB's message, nothing half-written, and ingest
 * resumes by itself once space is back. */
static void test_disk_full(void **state)
{
    struct fix *f = *state;
    char err[256] = "", filler[128], filler2[128];
    struct tbatch *t = NULL;
    struct store_stats st;
    uint64_t seq, hwm;
    struct statvfs vfs;
    int rc = 0;

    if (getuid() != 0) {
        printf("skip: the disk-full test needs root to mount a tmpfs\n");
        skip();
    }
    store_close(f->s);
    f->s = NULL;
    if (mount("tmpfs", f->dir, "tmpfs", 0, "size=8m") != 0) {
        printf("skip: cannot mount a tmpfs on %s: %s\n", f->dir, strerror(errno));
        skip();
    }
    f->s = open_store(f);
    snprintf(filler, sizeof(filler), "%s/filler", f->dir);
    /* leave about 1 MiB free (RocksDB preallocates its MANIFEST) */
    assert_int_equal(statvfs(f->dir, &vfs), 0);
    fill(filler, vfs.f_bavail * vfs.f_bsize / 1024 - 1024);
    for (seq = 1; seq < 5000; seq++) {
        t = tbatch_new("agent-1", seq, "job-full", 0, 8, seq * 8, 8, T0 + seq * NSEC_PER_SEC);
        rc = store_ingest(f->s, &t->b, err, sizeof(err));
        if (rc != STORE_INGEST_WRITTEN)
            break;
        tbatch_free(t);
    }
    assert_int_equal(rc, -EIO);
    printf("after %" PRIu64 " batches: %s\n", seq, err);
    assert_non_null(strstr(err, "No space left"));
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, seq - 1);
    /* Take the rest of the space. The next call tries for real: it reopens
     * the DB, which releases the WAL's preallocated tail, so it may fail
     * again or get through; it must not crash or write half a batch. */
    snprintf(filler2, sizeof(filler2), "%s/filler2", f->dir);
    fill(filler2, UINT64_MAX);
    rc = store_ingest(f->s, &t->b, err, sizeof(err));
    assert_true(rc == -EIO || rc == STORE_INGEST_WRITTEN);
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(unlink(filler2), 0);
    for (int i = 0; i < 40 && rc != STORE_INGEST_WRITTEN; i++) {
        clock_sleep_ns(100 * NSEC_PER_MSEC);
        rc = store_ingest(f->s, &t->b, err, sizeof(err));
    }
    assert_int_equal(rc, STORE_INGEST_WRITTEN);
    tbatch_free(t);
    /* and it goes on */
    for (uint64_t last = seq + 20; seq < last; seq++) {
        t = tbatch_new("agent-1", seq + 1, "job-full", 0, 8, (seq + 1) * 8, 8,
                       T0 + (seq + 1) * NSEC_PER_SEC);
        assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
        tbatch_free(t);
    }
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, seq);
    assert_int_equal(count_steps(f->s, "job-full"), seq * 64);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-full");
    assert_int_equal(ji->rank_steps, seq * 64);
    argus__v1__job_info__free_unpacked(ji, NULL);
    store_get_stats(f->s, &st);
    assert_true(st.write_errors >= 1);
    printf("disk full after %" PRIu64 " batches, resumed\n", seq - 21);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ingest_and_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_and_gaps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_odd_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
