#include "agent/delivery/names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/delivery/ksets.h"
#include "common/array.h"
#include "common/name_id.h"
#include "common/strmap.h"

/* Delivery state of one (job, id). */
struct names_state {
    uint64_t key; /* mix of job and id; 0 = empty slot */
    uint32_t job; /* index into jobs */
    uint64_t id;
    uint64_t sent_seq; /* last batch that carried it, 0 = never */
    bool acked, queued, inflight;
};

struct names_resource {
    Argus__V1__Resource r;
    uint64_t sent_seq;
    bool acked;
};

struct names {
    struct strmap strings; /* id -> name */
    struct names_state *states;
    size_t tcap, tcount;
    char **jobs;
    size_t njobs;
    size_t *queue, nqueue, qcap;       /* state slots queued for the next batch */
    size_t *inflight, ninflight, icap; /* state slots sent, not acked */
    Argus__V1__NameEntry *entries, **entry_ptrs;
    size_t ecap;
    struct names_resource *res;
    size_t nres;
    Argus__V1__Resource **res_ptrs;
    struct ksets *ksets;
};

static uint64_t names_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x ? x : 1;
}

struct names *names_new(void)
{
    struct names *n = calloc(1, sizeof(struct names));

    if (n && !(n->ksets = ksets_new())) {
        free(n);
        return NULL;
    }
    return n;
}

struct ksets *names_ksets(struct names *n)
{
    return n->ksets;
}

static void names_free_resource(Argus__V1__Resource *r)
{
    free(r->job);
    free(r->node);
    free(r->gpu_uuid);
}

void names_free(struct names *n)
{
    if (!n)
        return;
    strmap_clear(&n->strings);
    for (size_t i = 0; i < n->njobs; i++)
        free(n->jobs[i]);
    for (size_t i = 0; i < n->nres; i++)
        names_free_resource(&n->res[i].r);
    free(n->states);
    free(n->jobs);
    free(n->queue);
    free(n->inflight);
    free(n->entries);
    free(n->entry_ptrs);
    free(n->res);
    free(n->res_ptrs);
    ksets_free(n->ksets);
    free(n);
}

int names_define(struct names *n, uint64_t id, const char *name)
{
    int r = strmap_put(&n->strings, id, name);

    return r < 0 ? r : 0;
}

const char *names_lookup(const struct names *n, uint64_t id)
{
    return strmap_get(&n->strings, id);
}

static long names_job(struct names *n, const char *job)
{
    for (size_t i = 0; i < n->njobs; i++)
        if (strcmp(n->jobs[i], job) == 0)
            return (long)i;
    char **grown = realloc(n->jobs, (n->njobs + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    n->jobs = grown;
    if (!(n->jobs[n->njobs] = strdup(job)))
        return -ENOMEM;
    return (long)n->njobs++;
}

static size_t names_state_slot(struct names_state *t, size_t cap, uint64_t key, uint32_t job,
                               uint64_t id)
{
    size_t i = key & (cap - 1);

    while (t[i].key && !(t[i].key == key && t[i].job == job && t[i].id == id))
        i = (i + 1) & (cap - 1);
    return i;
}

/* Grow the state table; queue and inflight hold slot numbers, so they are
 * rebuilt from the flags. */
static int names_grow_states(struct names *n)
{
    size_t cap = n->tcap ? n->tcap * 2 : 256;
    struct names_state *t = calloc(cap, sizeof(*t));

    if (!t)
        return -ENOMEM;
    n->nqueue = n->ninflight = 0;
    for (size_t i = 0; i < n->tcap; i++) {
        struct names_state *s = &n->states[i];
        if (!s->key)
            continue;
        size_t k = names_state_slot(t, cap, s->key, s->job, s->id);
        t[k] = *s;
        if (s->queued &&
            array_reserve((void **)&n->queue, &n->qcap, n->nqueue + 1, sizeof(size_t)) == 0)
            n->queue[n->nqueue++] = k;
        if (s->inflight &&
            array_reserve((void **)&n->inflight, &n->icap, n->ninflight + 1, sizeof(size_t)) == 0)
            n->inflight[n->ninflight++] = k;
    }
    free(n->states);
    n->states = t;
    n->tcap = cap;
    return 0;
}

long names_job_index(struct names *n, const char *job)
{
    return names_job(n, job);
}

const char *names_job_name(const struct names *n, long j)
{
    return j >= 0 && (size_t)j < n->njobs ? n->jobs[j] : NULL;
}

void names_reference_at(struct names *n, long j, uint64_t id)
{
    if (j < 0 || (size_t)j >= n->njobs || !names_lookup(n, id))
        return;
    if ((n->tcount + 1) * 2 > n->tcap && names_grow_states(n) < 0)
        return;
    uint64_t key = names_mix(id ^ ((uint64_t)j << 48) ^ (uint64_t)j);
    size_t i = names_state_slot(n->states, n->tcap, key, (uint32_t)j, id);
    struct names_state *s = &n->states[i];
    if (!s->key) {
        *s = (struct names_state){.key = key, .job = (uint32_t)j, .id = id};
        n->tcount++;
    }
    if (s->acked || s->queued)
        return;
    if (array_reserve((void **)&n->queue, &n->qcap, n->nqueue + 1, sizeof(size_t)) < 0)
        return;
    s->queued = true;
    n->queue[n->nqueue++] = i;
}

size_t names_take(struct names *n, uint64_t seq, Argus__V1__NameEntry ***out)
{
    size_t k = 0;

    *out = NULL;
    ksets_sealed(n->ksets, seq);
    if (array_reserve((void **)&n->entries, &n->ecap, n->nqueue, sizeof(*n->entries)) < 0)
        return 0;
    free(n->entry_ptrs);
    n->entry_ptrs = malloc((n->nqueue ? n->nqueue : 1) * sizeof(*n->entry_ptrs));
    if (!n->entry_ptrs)
        return 0;
    for (size_t q = 0; q < n->nqueue; q++) {
        struct names_state *s = &n->states[n->queue[q]];
        s->queued = false;
        s->sent_seq = seq;
        if (!s->inflight &&
            array_reserve((void **)&n->inflight, &n->icap, n->ninflight + 1, sizeof(size_t)) == 0) {
            s->inflight = true;
            n->inflight[n->ninflight++] = n->queue[q];
        }
        argus__v1__name_entry__init(&n->entries[k]);
        n->entries[k].job = n->jobs[s->job];
        n->entries[k].id = s->id;
        n->entries[k].name = (char *)names_lookup(n, s->id);
        n->entry_ptrs[k] = &n->entries[k];
        k++;
    }
    n->nqueue = 0;
    *out = n->entry_ptrs;
    return k;
}

static char *names_dup(const char *s)
{
    return strdup(s ? s : "");
}

int names_set_resource(struct names *n, const Argus__V1__Resource *r)
{
    size_t i;

    for (i = 0; i < n->nres; i++)
        if (n->res[i].r.rank == r->rank && strcmp(n->res[i].r.job, r->job) == 0)
            break;
    if (i == n->nres) {
        struct names_resource *grown = realloc(n->res, (n->nres + 1) * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        n->res = grown;
        n->nres++;
    } else {
        names_free_resource(&n->res[i].r);
    }
    struct names_resource *x = &n->res[i];
    x->r = *r;
    x->r.job = names_dup(r->job);
    x->r.node = names_dup(r->node);
    x->r.gpu_uuid = names_dup(r->gpu_uuid);
    x->sent_seq = 0;
    x->acked = false;
    return x->r.job && x->r.node && x->r.gpu_uuid ? 0 : -ENOMEM;
}

size_t names_take_resources(struct names *n, uint64_t seq, Argus__V1__Resource ***out)
{
    size_t k = 0;

    free(n->res_ptrs);
    n->res_ptrs = malloc((n->nres ? n->nres : 1) * sizeof(*n->res_ptrs));
    *out = n->res_ptrs;
    if (!n->res_ptrs)
        return 0;
    for (size_t i = 0; i < n->nres; i++) {
        if (n->res[i].acked)
            continue;
        n->res[i].sent_seq = seq;
        n->res_ptrs[k++] = &n->res[i].r;
    }
    return k;
}

void names_ack(struct names *n, uint64_t acked)
{
    size_t keep = 0;

    for (size_t q = 0; q < n->ninflight; q++) {
        struct names_state *s = &n->states[n->inflight[q]];
        if (s->sent_seq && s->sent_seq <= acked) {
            s->acked = true;
            s->inflight = false;
        } else {
            n->inflight[keep++] = n->inflight[q];
        }
    }
    n->ninflight = keep;
    ksets_ack(n->ksets, acked);
    for (size_t i = 0; i < n->nres; i++)
        if (n->res[i].sent_seq && n->res[i].sent_seq <= acked)
            n->res[i].acked = true;
}

size_t names_unsent_resources(const struct names *n)
{
    size_t k = 0;

    for (size_t i = 0; i < n->nres; i++)
        k += !n->res[i].acked && !n->res[i].sent_seq;
    return k;
}

void names_reset(struct names *n)
{
    ksets_reset(n->ksets);
    for (size_t i = 0; i < n->tcap; i++) {
        n->states[i].acked = false;
        n->states[i].sent_seq = 0; /* an ack of an earlier sending no longer counts */
    }
    for (size_t i = 0; i < n->nres; i++) {
        n->res[i].acked = false;
        n->res[i].sent_seq = 0;
    }
}
