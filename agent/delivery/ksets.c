/* Which kernel identity sets the collectors hold: see ksets.h. */
#include "agent/delivery/ksets.h"

#include "common/mix.h"

#include <stdlib.h>
#include <string.h>

#define KSETS_SLOTS (2 * KSETS_MAX) /* a power of two: at most half full */

/* A set's id and identities (ids malloc'd; id 0: none). */
struct ksets_set {
    uint64_t id;
    struct kernel_code_ident *ids;
    size_t n;
};

/* One (job, skeleton). */
struct ksets_entry {
    uint64_t skel; /* 0: an empty slot */
    uint32_t job;
    uint32_t seen;         /* sightings, saturating */
    struct ksets_set held; /* acked */
    struct ksets_set cand; /* defined, not acked */
    uint64_t cand_seq;     /* the first batch that defined cand, 0: not sealed yet */
    bool pending;          /* cand defined in the open batch */
};

struct ksets {
    struct ksets_entry slot[KSETS_SLOTS];
    size_t count;
    size_t inflight; /* entries with cand sealed and not acked */
    uint32_t pending[KSETS_MAX];
    size_t npending;
};

struct ksets *ksets_new(void)
{
    return calloc(1, sizeof(struct ksets));
}

static void ksets_set_free(struct ksets_set *s)
{
    free(s->ids);
    memset(s, 0, sizeof(*s));
}

/* Forget every skeleton. */
static void ksets_clear(struct ksets *k)
{
    for (size_t i = 0; i < KSETS_SLOTS; i++) {
        ksets_set_free(&k->slot[i].held);
        ksets_set_free(&k->slot[i].cand);
    }
    memset(k->slot, 0, sizeof(k->slot));
    k->count = k->inflight = k->npending = 0;
}

void ksets_free(struct ksets *k)
{
    if (!k)
        return;
    ksets_clear(k);
    free(k);
}

/* The skeleton of r: its groups' names and streams, in order (never 0). */
static uint64_t ksets_skeleton(const Argus__V1__StepRecord *r)
{
    uint64_t h = mix64(r->n_kernels + 0x2545f4914f6cdd1dULL);

    for (size_t i = 0; i < r->n_kernels; i++)
        h = mix64(h ^ r->kernels[i]->name_id) ^ r->kernels[i]->stream;
    return h ? h : 1;
}

/* The slot of (job, skel), or the empty one where it would go. */
static struct ksets_entry *ksets_slot(struct ksets *k, uint32_t job, uint64_t skel)
{
    size_t i = mix64(skel ^ job) & (KSETS_SLOTS - 1);

    while (k->slot[i].skel && !(k->slot[i].skel == skel && k->slot[i].job == job))
        i = (i + 1) & (KSETS_SLOTS - 1);
    return &k->slot[i];
}

/* The groups of r whose work id is not held's (r has its skeleton). */
static size_t ksets_moved(const Argus__V1__StepRecord *r, const struct ksets_set *held)
{
    size_t moved = 0;

    for (size_t i = 0; i < r->n_kernels; i++)
        moved += r->kernels[i]->work_id != held->ids[i].work_id;
    return moved;
}

/* cand := r's set (id). 0 or -ENOMEM. */
static int ksets_candidate(struct ksets_entry *e, const Argus__V1__StepRecord *r, uint64_t id)
{
    struct kernel_code_ident *ids = malloc(r->n_kernels * sizeof(*ids));

    if (!ids)
        return -1;
    kernel_code_idents(r, ids);
    ksets_set_free(&e->cand);
    e->cand = (struct ksets_set){id, ids, r->n_kernels};
    e->cand_seq = 0;
    return 0;
}

/* The entry of (job, skel), new when it is not there (a full table is
 * forgotten first). */
static struct ksets_entry *ksets_entry(struct ksets *k, uint32_t job, uint64_t skel)
{
    struct ksets_entry *e = ksets_slot(k, job, skel);

    if (e->skel)
        return e;
    if (k->count == KSETS_MAX) {
        ksets_clear(k);
        e = ksets_slot(k, job, skel);
    }
    e->skel = skel;
    e->job = job;
    k->count++;
    return e;
}

void ksets_plan(struct ksets *k, long job, const Argus__V1__StepRecord *r, struct ksets_plan *out)
{
    struct ksets_entry *e;
    uint64_t id;

    memset(out, 0, sizeof(*out));
    if (!k || job < 0 || job > UINT32_MAX || !r->n_kernels)
        return;
    out->skel = ksets_skeleton(r);
    e = ksets_entry(k, (uint32_t)job, out->skel);
    e->seen += e->seen < UINT32_MAX;
    if (e->held.id && e->held.n == r->n_kernels && ksets_moved(r, &e->held) * 2 <= r->n_kernels) {
        out->use = KSETS_REFER;
        out->base = (struct kernel_code_set){e->held.id, e->held.ids, e->held.n};
        return;
    }
    id = kernel_code_record_set(r);
    if (e->seen < 2 || (e->cand.id && e->cand.id != id && e->cand_seq))
        return; /* new, or another set of it in flight: whole */
    if (e->cand.id != id && ksets_candidate(e, r, id) < 0)
        return;
    out->use = KSETS_DEFINE;
    out->define = id;
}

void ksets_defined(struct ksets *k, long job, uint64_t skel)
{
    struct ksets_entry *e;

    if (!k || job < 0 || job > UINT32_MAX || !skel)
        return;
    e = ksets_slot(k, (uint32_t)job, skel);
    if (!e->skel || !e->cand.id || e->pending || k->npending == KSETS_MAX)
        return; /* forgotten since the plan: nothing to stamp */
    e->pending = true;
    k->pending[k->npending++] = (uint32_t)(e - k->slot);
}

void ksets_sealed(struct ksets *k, uint64_t seq)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->npending; i++) {
        struct ksets_entry *e = &k->slot[k->pending[i]];

        e->pending = false;
        if (e->cand.id && !e->cand_seq) { /* the first batch that defined it: its ack is enough */
            e->cand_seq = seq;
            k->inflight++;
        }
    }
    k->npending = 0;
}

void ksets_ack(struct ksets *k, uint64_t acked)
{
    for (size_t i = 0; k && k->inflight && i < KSETS_SLOTS; i++) {
        struct ksets_entry *e = &k->slot[i];

        if (e->skel && e->cand.id && e->cand_seq && e->cand_seq <= acked) {
            ksets_set_free(&e->held);
            e->held = e->cand;
            memset(&e->cand, 0, sizeof(e->cand));
            e->cand_seq = 0;
            k->inflight--;
        }
    }
}

void ksets_reset(struct ksets *k)
{
    for (size_t i = 0; k && i < KSETS_SLOTS; i++) {
        ksets_set_free(&k->slot[i].held);
        ksets_set_free(&k->slot[i].cand);
        k->slot[i].cand_seq = 0;
        k->slot[i].pending = false;
    }
    if (k)
        k->inflight = k->npending = 0;
}

size_t ksets_count(const struct ksets *k, size_t *held)
{
    *held = 0;
    for (size_t i = 0; k && i < KSETS_SLOTS; i++)
        *held += k->slot[i].skel && k->slot[i].held.id;
    return k ? k->count : 0;
}
