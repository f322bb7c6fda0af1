/* NVTX range projection onto kernels (see source_cupti_proj.h). */
#include <stdlib.h>
#include <string.h>

#include "agent/sources/source_cupti_proj.h"

#define WIN_MASK (CUPTI_PROJ_WINDOW - 1)
#define EARLY_SLOTS (1u << 14) /* kernels seen before their launch record */
#define EARLY_MASK (EARLY_SLOTS - 1)

struct proj_launch {
    uint32_t corr, tid;
};

struct proj_kernel { /* a kernel whose launch record has not come yet */
    uint32_t corr, stream;
    uint64_t start, end;
};

struct proj_acc {
    uint32_t stream;
    uint64_t busy, first, last;
};

struct proj_range {
    uint64_t name_id, start, end;
    uint32_t id, tid, corr_lo, corr_hi;
    bool used, closed;
    int nacc;
    struct proj_acc acc[CUPTI_PROJ_STREAMS];
};

struct cupti_proj {
    uint32_t max_corr; /* largest correlation id of a kernel seen */
    uint64_t last_ts;  /* latest kernel end seen */
    uint64_t overflows;
    struct proj_range ranges[CUPTI_PROJ_RANGES];
    struct proj_launch launch[CUPTI_PROJ_WINDOW];
    struct proj_kernel early[EARLY_SLOTS][2]; /* two streams per launch */
};

struct cupti_proj *cupti_proj_new(void)
{
    return calloc(1, sizeof(struct cupti_proj));
}

void cupti_proj_free(struct cupti_proj *p)
{
    free(p);
}

uint64_t cupti_proj_overflows(const struct cupti_proj *p)
{
    return p->overflows;
}

void cupti_proj_open(struct cupti_proj *p, uint32_t id, uint64_t name_id, uint32_t tid,
                     uint64_t start)
{
    for (int i = 0; i < CUPTI_PROJ_RANGES; i++) {
        struct proj_range *r = &p->ranges[i];
        if (r->used)
            continue;
        memset(r, 0, sizeof(*r));
        r->name_id = name_id;
        r->start = start;
        r->id = id;
        r->tid = tid;
        r->used = true;
        return;
    }
    p->overflows++;
}

void cupti_proj_close(struct cupti_proj *p, uint32_t id, uint64_t end)
{
    for (int i = 0; i < CUPTI_PROJ_RANGES; i++) {
        struct proj_range *r = &p->ranges[i];
        if (r->used && !r->closed && r->id == id) {
            r->closed = true;
            r->end = end;
            return;
        }
    }
}

static void proj_acc_add(struct proj_range *r, uint32_t stream, uint64_t start, uint64_t end)
{
    int i;

    for (i = 0; i < r->nacc && r->acc[i].stream != stream; i++)
        ;
    if (i == CUPTI_PROJ_STREAMS)
        return; /* more streams than we compare: the busiest are the first seen */
    if (i == r->nacc)
        r->acc[r->nacc++] = (struct proj_acc){stream, 0, start, end};
    r->acc[i].busy += end - start;
    r->acc[i].first = start < r->acc[i].first ? start : r->acc[i].first;
    r->acc[i].last = end > r->acc[i].last ? end : r->acc[i].last;
}

/* A kernel of launch corr made on thread tid: into every range owning it. */
static void proj_attribute(struct cupti_proj *p, uint32_t corr, uint32_t tid, uint32_t stream,
                           uint64_t start, uint64_t end)
{
    for (int i = 0; i < CUPTI_PROJ_RANGES; i++) {
        struct proj_range *r = &p->ranges[i];
        if (r->used && r->tid == tid && r->corr_lo && corr >= r->corr_lo && corr <= r->corr_hi)
            proj_acc_add(r, stream, start, end);
    }
}

void cupti_proj_launch(struct cupti_proj *p, uint32_t corr, uint32_t tid, uint64_t start)
{
    struct proj_kernel *early = p->early[corr & EARLY_MASK];

    p->launch[corr & WIN_MASK] = (struct proj_launch){corr, tid};
    for (int i = 0; i < CUPTI_PROJ_RANGES; i++) {
        struct proj_range *r = &p->ranges[i];
        if (!r->used || r->tid != tid || start < r->start || (r->closed && start > r->end))
            continue;
        if (!r->corr_lo || corr < r->corr_lo)
            r->corr_lo = corr;
        if (corr > r->corr_hi)
            r->corr_hi = corr;
    }
    for (int j = 0; j < 2; j++) /* its kernels came first */
        if (early[j].corr == corr) {
            proj_attribute(p, corr, tid, early[j].stream, early[j].start, early[j].end);
            early[j].corr = 0;
        }
}

void cupti_proj_kernel(struct cupti_proj *p, uint32_t corr, uint32_t stream, uint64_t start,
                       uint64_t end)
{
    struct proj_launch *l = &p->launch[corr & WIN_MASK];
    struct proj_kernel *early = p->early[corr & EARLY_MASK];

    if (corr > p->max_corr)
        p->max_corr = corr;
    if (end > p->last_ts)
        p->last_ts = end;
    if (l->corr == corr) {
        proj_attribute(p, corr, l->tid, stream, start, end);
        return;
    }
    for (int j = 0; j < 2; j++) /* same launch, same stream: merge (graphs) */
        if (early[j].corr == corr && early[j].stream == stream) {
            early[j].start = start < early[j].start ? start : early[j].start;
            early[j].end = end > early[j].end ? end : early[j].end;
            return;
        }
    early[early[0].corr == corr ? 1 : 0] = (struct proj_kernel){corr, stream, start, end};
}

int cupti_proj_settle(struct cupti_proj *p, bool all, uint64_t horizon_ns, cupti_proj_emit_fn emit,
                      void *ctx)
{
    int n = 0;

    for (int i = 0; i < CUPTI_PROJ_RANGES; i++) {
        struct proj_range *r = &p->ranges[i];
        struct proj_acc *best = NULL;
        if (!r->used || !r->closed)
            continue;
        if (!all && !(r->corr_hi && p->max_corr > r->corr_hi) && p->last_ts <= r->end + horizon_ns)
            continue;
        for (int j = 0; j < r->nacc; j++)
            if (!best || r->acc[j].busy > best->busy)
                best = &r->acc[j];
        if (best) {
            emit(ctx, r->name_id, best->first, best->last - best->first, best->stream);
            n++;
        }
        r->used = false;
    }
    return n;
}
