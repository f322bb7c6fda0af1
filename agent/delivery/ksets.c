/* Which kernel identity sets the collectors hold: see ksets.h. */
#include "agent/delivery/ksets.h"

#include <stdlib.h>
#include <string.h>

#define KSETS_SLOTS (2 * KSETS_MAX) /* a power of two: at most half full */

/* One (job, set). */
struct ksets_entry {
    uint64_t set; /* 0: an empty slot */
    uint32_t job;
    uint32_t seen;     /* sightings, saturating */
    uint64_t sent_seq; /* the first batch that defined it since a reset, 0: none */
    bool acked, pending;
};

struct ksets {
    struct ksets_entry slot[KSETS_SLOTS];
    size_t count;
    size_t inflight;             /* sets sent and not acked */
    uint32_t pending[KSETS_MAX]; /* slots defined in the open batch */
    size_t npending;
};

struct ksets *ksets_new(void)
{
    return calloc(1, sizeof(struct ksets));
}

void ksets_free(struct ksets *k)
{
    free(k);
}

static size_t ksets_hash(uint64_t set, uint32_t job)
{
    uint64_t x = set ^ ((uint64_t)job * 0x9e3779b97f4a7c15ULL);

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return (size_t)(x ^ (x >> 33)) & (KSETS_SLOTS - 1);
}

/* The slot of (job, set), or the empty one where it would go. */
static struct ksets_entry *ksets_slot(struct ksets *k, uint32_t job, uint64_t set)
{
    size_t i = ksets_hash(set, job);

    while (k->slot[i].set && !(k->slot[i].set == set && k->slot[i].job == job))
        i = (i + 1) & (KSETS_SLOTS - 1);
    return &k->slot[i];
}

enum ksets_use ksets_use(struct ksets *k, long job, uint64_t set)
{
    struct ksets_entry *e;

    if (!k || job < 0 || job > UINT32_MAX || !set)
        return KSETS_WHOLE;
    e = ksets_slot(k, (uint32_t)job, set);
    if (!e->set) {
        if (k->count == KSETS_MAX) { /* full: forget them all */
            memset(k->slot, 0, sizeof(k->slot));
            k->count = k->npending = k->inflight = 0;
            e = ksets_slot(k, (uint32_t)job, set);
        }
        *e = (struct ksets_entry){.set = set, .job = (uint32_t)job};
        k->count++;
    }
    e->seen += e->seen < UINT32_MAX;
    return e->acked ? KSETS_REFER : e->seen >= 2 ? KSETS_DEFINE : KSETS_WHOLE;
}

void ksets_defined(struct ksets *k, long job, uint64_t set)
{
    struct ksets_entry *e;

    if (!k || job < 0 || job > UINT32_MAX || !set)
        return;
    e = ksets_slot(k, (uint32_t)job, set);
    if (!e->set || e->pending || k->npending == KSETS_MAX)
        return; /* forgotten by a reset since ksets_use: nothing to stamp */
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
        if (!e->sent_seq) { /* the first batch that defined it: its ack is enough */
            e->sent_seq = seq;
            k->inflight++;
        }
    }
    k->npending = 0;
}

void ksets_ack(struct ksets *k, uint64_t acked)
{
    for (size_t i = 0; k && k->inflight && i < KSETS_SLOTS; i++) {
        struct ksets_entry *e = &k->slot[i];

        if (e->set && !e->acked && e->sent_seq && e->sent_seq <= acked) {
            e->acked = true;
            k->inflight--;
        }
    }
}

void ksets_reset(struct ksets *k)
{
    for (size_t i = 0; k && i < KSETS_SLOTS; i++) {
        k->slot[i].acked = false;
        k->slot[i].sent_seq = 0; /* an ack of an earlier sending no longer counts */
    }
    if (k)
        k->inflight = 0;
}

size_t ksets_count(const struct ksets *k, size_t *held)
{
    *held = 0;
    for (size_t i = 0; k && i < KSETS_SLOTS; i++)
        *held += k->slot[i].set && k->slot[i].acked;
    return k ? k->count : 0;
}
