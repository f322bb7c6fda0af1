/* A running job's placement and suspects from the store: see diag_restore.h. */
#include "collector/diag/diag_restore.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct restore_job {
    uint64_t since_ns;
    bool recent;
};

static bool restore_seen_since(const Argus__V1__JobInfo *ji, uint64_t since_ns)
{
    return ji->last_seen_unix_ns >= since_ns;
}

static int restore_job_info(void *ctx, const void *val, size_t len)
{
    struct restore_job *c = ctx;
    Argus__V1__JobInfo *ji = argus__v1__job_info__unpack(NULL, len, val);

    if (!ji)
        return 0; /* unreadable: treated as not recent */
    c->recent = restore_seen_since(ji, c->since_ns);
    argus__v1__job_info__free_unpacked(ji, NULL);
    return 0;
}

/* Two passes over the job's Resources: the highest attempt, then that
 * attempt's ranks into the engine. */
struct restore_ranks {
    struct diag_engine *e;
    const char *job;
    bool add;
    struct diag_restored *out;
};

static int restore_rank(void *ctx, const void *val, size_t len)
{
    struct restore_ranks *c = ctx;
    Argus__V1__Resource *r = argus__v1__resource__unpack(NULL, len, val);

    if (!r)
        return 0;
    if (!c->add && r->restart > c->out->restart)
        c->out->restart = r->restart;
    else if (c->add && r->restart == c->out->restart && strcmp(r->job, c->job) == 0 &&
             diag_engine_add_resource(c->e, r) == 0)
        c->out->ranks++;
    argus__v1__resource__free_unpacked(r, NULL);
    return 0;
}

struct restore_reports {
    struct recent_suspects *recent;
    uint32_t n;
};

static int restore_report(void *ctx, const void *val, size_t len)
{
    struct restore_reports *c = ctx;
    Argus__V1__Report *r = argus__v1__report__unpack(NULL, len, val);

    if (!r)
        return 0;
    recent_suspects_note(c->recent, r);
    c->n++;
    argus__v1__report__free_unpacked(r, NULL);
    return 0;
}

int diag_restore_job(struct store *s, const char *job, uint64_t now_ns, uint64_t idle_ns,
                     struct diag_engine *e, struct recent_suspects *recent,
                     struct diag_restored *out)
{
    struct restore_job jc = {.since_ns = idle_ns && now_ns > idle_ns ? now_ns - idle_ns : 0};
    struct restore_ranks rc = {e, job, false, out};
    struct restore_reports pc = {recent, 0};
    int err;

    *out = (struct diag_restored){0};
    err = store_get_job(s, job, restore_job_info, &jc);
    if (err == -ENOENT || (!err && !jc.recent))
        return 0;
    err = err ? err : store_scan_ranks(s, job, restore_rank, &rc);
    rc.add = true;
    err = err ? err : store_scan_ranks(s, job, restore_rank, &rc);
    err = err ? err : store_scan_reports(s, job, 0, 0, restore_report, &pc);
    out->reports = pc.n;
    return err;
}

struct restore_each {
    uint64_t since_ns;
    void (*fn)(void *ctx, const char *job);
    void *ctx;
};

static int restore_each_job(void *ctx, const void *val, size_t len)
{
    struct restore_each *c = ctx;
    Argus__V1__JobInfo *ji = argus__v1__job_info__unpack(NULL, len, val);

    if (!ji)
        return 0;
    if (restore_seen_since(ji, c->since_ns) && ji->job && *ji->job)
        c->fn(c->ctx, ji->job);
    argus__v1__job_info__free_unpacked(ji, NULL);
    return 0;
}

int diag_restore_foreach_recent(struct store *s, uint64_t now_ns, uint64_t idle_ns,
                                void (*fn)(void *ctx, const char *job), void *ctx)
{
    struct restore_each c = {idle_ns && now_ns > idle_ns ? now_ns - idle_ns : 0, fn, ctx};

    return store_scan_jobs(s, restore_each_job, &c);
}
