/* Per-step feature extraction: see diag_frame.h. */
#include "collector/diag/diag_frame.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clusters.h"

int diag_frame_reserve(struct diag_frame *f, uint32_t cap)
{
    if (cap <= f->cap)
        return 0;
    struct diag_rank_step *tmp = realloc(f->ranks, (size_t)cap * sizeof(*tmp));
    if (!tmp)
        return -ENOMEM;
    memset(tmp + f->cap, 0, (size_t)(cap - f->cap) * sizeof(*tmp));
    f->ranks = tmp;
    /* not zeroed: a rank's grid is read only where its kernel_mask says it
     * was written (5 MB a frame at 10,240 ranks not touched before use) */
    diag_rank_q *q = realloc(f->q, (size_t)cap * sizeof(*q));
    if (!q)
        return -ENOMEM; /* ranks grew, cap did not: both stay valid */
    f->q = q;
    f->cap = cap;
    return 0;
}

void diag_frame_reset(struct diag_frame *f, uint64_t step, uint64_t now_ns)
{
    for (uint32_t i = 0; i < f->cap; i++)
        f->ranks[i].present = false;
    f->used = true;
    f->closed = false;
    f->n_amend = 0;
    f->step = step;
    f->first_ns = now_ns;
    f->onset_ns = 0;
    f->reported = 0;
    f->n_colls = 0;
}

void diag_frame_free(struct diag_frame *f)
{
    free(f->ranks);
    free(f->q);
    free(f->colls);
    free(f->amend);
    memset(f, 0, sizeof(*f));
}

size_t diag_frame_bytes(const struct diag_frame *f)
{
    return (size_t)f->cap * DIAG_FRAME_RANK_BYTES + f->cap_colls * sizeof(*f->colls) +
           (size_t)f->cap_amend * sizeof(*f->amend);
}

int diag_frame_note_amend(struct diag_frame *f, uint32_t rank)
{
    if (f->n_amend == f->cap_amend) {
        uint32_t cap = f->cap_amend ? f->cap_amend * 2 : 16;
        uint32_t *tmp = realloc(f->amend, (size_t)cap * sizeof(*tmp));
        if (!tmp)
            return -ENOMEM;
        f->amend = tmp;
        f->cap_amend = cap;
    }
    f->amend[f->n_amend++] = rank;
    return 0;
}

/* Index of id in ids[0..*n), appended when missing and there is room;
 * -1 when the table is full. */
static int dict_index(uint64_t *ids, uint32_t *n, uint32_t max, uint64_t id, uint64_t *overflow)
{
    for (uint32_t i = 0; i < *n; i++)
        if (ids[i] == id)
            return (int)i;
    if (*n >= max) {
        (*overflow)++;
        return -1;
    }
    ids[*n] = id;
    return (int)(*n)++;
}

static int kernel_index(struct diag_dict *d, uint64_t id, uint32_t stream)
{
    for (uint32_t i = 0; i < d->n_kernel; i++)
        if (d->kernel[i] == id && d->kernel_stream[i] == stream)
            return (int)i;
    if (d->n_kernel >= DIAG_MAX_KERNELS) {
        d->overflow++;
        return -1;
    }
    d->kernel[d->n_kernel] = id;
    d->kernel_stream[d->n_kernel] = stream;
    return (int)d->n_kernel++;
}

bool diag_dict_is_coll_stream(const struct diag_dict *d, uint32_t stream)
{
    for (uint32_t i = 0; i < d->n_coll_stream; i++)
        if (d->coll_stream[i] == stream)
            return true;
    return false;
}

static void note_coll_stream(struct diag_dict *d, uint32_t stream)
{
    if (stream == 0 || diag_dict_is_coll_stream(d, stream))
        return;
    if (d->n_coll_stream < DIAG_MAX_COLL_STREAMS)
        d->coll_stream[d->n_coll_stream++] = stream;
}

static int add_colls(struct diag_frame *f, struct diag_dict *d, const Argus__V1__StepRecord *s)
{
    size_t need = f->n_colls + s->n_collectives;

    if (need > f->cap_colls) {
        size_t cap = f->cap_colls ? f->cap_colls : 1024;
        while (cap < need)
            cap *= 2;
        struct diag_coll *tmp = realloc(f->colls, cap * sizeof(*tmp));
        if (!tmp)
            return -ENOMEM;
        f->colls = tmp;
        f->cap_colls = cap;
    }
    uint16_t ord[DIAG_MAX_COLL_NAMES] = {0};
    for (size_t i = 0; i < s->n_collectives; i++) {
        const Argus__V1__Collective *c = s->collectives[i];
        int ni = dict_index(d->coll, &d->n_coll, DIAG_MAX_COLL_NAMES, c->name_id, &d->overflow);
        uint64_t arrival = c->host_arrival_unix_ns ? c->host_arrival_unix_ns : c->gpu_start_unix_ns;
        if (ni < 0 || !arrival)
            continue;
        /* Host-only calls (no GPU times) still say who arrived last. */
        bool gpu = c->gpu_start_unix_ns && c->gpu_end_unix_ns;
        if (gpu)
            note_coll_stream(d, c->stream);
        struct diag_coll *o = &f->colls[f->n_colls++];
        o->comm_id = c->comm_id;
        o->seq = c->seq;
        o->arrival = (int64_t)arrival;
        o->start = (int64_t)(gpu ? c->gpu_start_unix_ns : arrival);
        o->end = (int64_t)(gpu ? c->gpu_end_unix_ns : c->host_return_unix_ns);
        o->local = c->seq_local;
        o->rank = s->rank;
        o->name = (uint8_t)ni;
        o->ord = ord[ni] < UINT16_MAX ? ord[ni]++ : UINT16_MAX;
    }
    return 0;
}

static void add_kernels(struct diag_rank_step *r, diag_rank_q *q, struct diag_dict *d,
                        const Argus__V1__StepRecord *s)
{
    for (size_t i = 0; i < s->n_kernels; i++) {
        const Argus__V1__KernelGroup *kg = s->kernels[i];
        uint64_t sum = 0, count = 0;

        for (size_t c = 0; c < kg->n_clusters; c++) {
            sum += kg->clusters[c]->sum_ns;
            count += kg->clusters[c]->count;
        }
        bool coll = diag_dict_is_coll_stream(d, kg->stream);
        if (!coll) {
            r->busy_ns += sum;
            r->kernel_count += count > UINT32_MAX - r->kernel_count ? UINT32_MAX - r->kernel_count
                                                                    : (uint32_t)count;
        }
        int ki = kernel_index(d, kg->name_id, kg->stream);
        if (ki < 0 || !s->sampled)
            continue;
        r->work_id[ki] = kg->work_id;
        /* L3 reads the grids of compute streams only (the set of
         * collective streams only grows): the grid of a collective stream's
         * kernel is not computed, its bit set as the grid would be (counts) */
        if (coll ? count > 0 : clusters_quantile_grid(kg, (*q)[ki], DIAG_QGRID) == 0)
            r->kernel_mask |= 1u << ki;
    }
}

uint64_t diag_frame_work_majority(const struct diag_frame *f, const uint32_t *mem, uint32_t n,
                                  int k)
{
    uint64_t cand = 0;
    uint32_t votes = 0, known = 0, same = 0;

    /* Boyer-Moore majority vote, then a count to confirm it. */
    for (uint32_t i = 0; i < n; i++) {
        const struct diag_rank_step *r = &f->ranks[mem[i]];
        if (mem[i] >= f->cap || !r->present || !r->work_id[k])
            continue;
        known++;
        if (!votes)
            cand = r->work_id[k];
        if (r->work_id[k] == cand)
            votes++;
        else
            votes--;
    }
    for (uint32_t i = 0; cand && i < n; i++)
        same += mem[i] < f->cap && f->ranks[mem[i]].present && f->ranks[mem[i]].work_id[k] == cand;
    return same * 2 > known ? cand : 0;
}

int diag_frame_add_record(struct diag_frame *f, struct diag_dict *dict,
                          const Argus__V1__StepRecord *s)
{
    struct diag_rank_step *r = &f->ranks[s->rank];

    if (r->present)
        return 1;
    memset(r, 0, sizeof(*r));
    int err = add_colls(f, dict, s);
    if (err)
        return err;
    r->present = true;
    r->duration_ns = s->duration_ns;
    /* The records' own time, not arrival: the same on every collector (a
     * late record does not move a closed step's onset, which ids carry). */
    if (!f->closed && s->start_unix_ns && (!f->onset_ns || s->start_unix_ns < f->onset_ns))
        f->onset_ns = s->start_unix_ns;
    for (size_t i = 0; i < s->n_phases; i++) {
        const Argus__V1__Phase *p = s->phases[i];
        int pi =
            dict_index(dict->phase, &dict->n_phase, DIAG_MAX_PHASES, p->name_id, &dict->overflow);
        if (pi >= 0)
            r->phase_ns[pi] += p->duration_ns;
    }
    if (s->host) {
        r->off_cpu_ns = s->host->off_cpu_ns;
        r->runq_ns = s->host->runq_ns;
        r->sync_wait_ns = s->host->sync_wait_ns;
    }
    add_kernels(r, &f->q[s->rank], dict, s);
    diag_hw_extract(s->hw, &r->hw, &r->xid);
    f->reported++;
    return 0;
}

static bool name_has(const char *name, const char *const *words, size_t n_words)
{
    char low[128];
    size_t n = 0;

    for (; name[n] && n + 1 < sizeof(low); n++)
        low[n] = (char)tolower((unsigned char)name[n]);
    low[n] = 0;
    for (size_t i = 0; i < n_words; i++)
        if (strstr(low, words[i]))
            return true;
    return false;
}

static bool expert_name(const char *name)
{
    static const char *const words[] = {"expert", "moe", "alltoall", "all_to_all", "all2all"};

    return name_has(name, words, sizeof(words) / sizeof(words[0]));
}

static void classify(uint8_t *cls, const uint64_t *ids, uint32_t n, diag_dict_name_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < n; i++) {
        if (cls[i] != DIAG_CLASS_UNKNOWN)
            continue;
        const char *name = fn ? fn(ctx, ids[i]) : NULL;
        if (name)
            cls[i] = expert_name(name) ? DIAG_CLASS_EXPERT : DIAG_CLASS_WORK;
    }
}

void diag_dict_classify(struct diag_dict *d, diag_dict_name_fn name, void *ctx)
{
    static const char *const back[] = {"backward", "bwd"};

    for (uint32_t i = 0; i < d->n_phase; i++) {
        const char *n =
            d->phase_class[i] == DIAG_CLASS_UNKNOWN && name ? name(ctx, d->phase[i]) : NULL;
        if (n)
            d->phase_backward[i] = name_has(n, back, 2);
    }
    classify(d->phase_class, d->phase, d->n_phase, name, ctx);
    classify(d->coll_class, d->coll, d->n_coll, name, ctx);
}
