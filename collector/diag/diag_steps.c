/* Open and kept steps of one job: see diag_steps.h. */
#include "collector/diag/diag_steps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES (256ULL << 20)

int diag_steps_init(struct diag_steps *w, size_t max_bytes, uint32_t keep)
{
    memset(w, 0, sizeof(*w));
    w->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
    w->base_bytes = w->max_bytes;
    w->keep = keep;
    w->n = 16;
    w->frames = calloc(w->n, sizeof(*w->frames));
    return w->frames ? 0 : -ENOMEM;
}

void diag_steps_free(struct diag_steps *w)
{
    for (uint32_t i = 0; w->frames && i < w->n; i++)
        diag_frame_free(&w->frames[i]);
    free(w->frames);
    w->frames = NULL;
}

int diag_steps_reserve(struct diag_steps *w, uint32_t ranks)
{
    size_t want;

    if (ranks > w->ranks)
        w->ranks = ranks;
    want = (size_t)w->ranks * DIAG_STEPS_BYTES_PER_RANK;
    if (want > DIAG_STEPS_GROWTH * w->base_bytes)
        want = DIAG_STEPS_GROWTH * w->base_bytes;
    w->max_bytes = want > w->base_bytes ? want : w->base_bytes;
    for (uint32_t i = 0; i < w->n; i++)
        if (w->frames[i].used && diag_frame_reserve(&w->frames[i], w->ranks))
            return -ENOMEM;
    return 0;
}

size_t diag_steps_bytes(const struct diag_steps *w)
{
    size_t sum = 0;

    for (uint32_t i = 0; i < w->n; i++)
        sum += diag_frame_bytes(&w->frames[i]);
    return sum;
}

/* Double the ring, moving every frame in use to its new slot; a kept frame
 * that collides with a newer one is dropped. 0, or -ENOSPC at the cap. */
static int grow(struct diag_steps *w)
{
    uint32_t n = w->n * 2;

    if (n > DIAG_STEPS_MAX_SLOTS)
        return -ENOSPC;
    struct diag_frame *fr = calloc(n, sizeof(*fr));
    if (!fr)
        return -ENOMEM;
    for (uint32_t i = 0; i < w->n; i++) {
        struct diag_frame *f = &w->frames[i];
        if (!f->used) {
            diag_frame_free(f);
            continue;
        }
        struct diag_frame *to = &fr[f->step % n];
        if (to->used && to->step > f->step && f->closed) {
            diag_frame_free(f);
            continue;
        }
        diag_frame_free(to);
        *to = *f;
    }
    free(w->frames);
    w->frames = fr;
    w->n = n;
    return 0;
}

/* Take the memory of one frame that is not open (unused first, then the
 * oldest kept): into (the slot being opened) gets its buffers when it has
 * none, so that a job at its budget reuses memory already touched (a frame
 * is 7 MB at 10,240 ranks; freed, the next one came back as fresh pages),
 * else they are freed. false when every frame with memory is open. */
static bool release_one(struct diag_steps *w, struct diag_frame *into)
{
    struct diag_frame *victim = NULL;

    for (uint32_t i = 0; i < w->n; i++) {
        struct diag_frame *f = &w->frames[i];
        if (!f->cap || f == into || (f->used && !f->closed))
            continue;
        if (!f->used)
            victim = f;
        else if (!victim || (victim->used && f->step < victim->step))
            victim = f;
        if (!victim->used)
            break;
    }
    if (!victim)
        return false;
    if (into->cap) {
        diag_frame_free(victim);
        return true;
    }
    into->ranks = victim->ranks;
    into->q = victim->q;
    into->cap = victim->cap;
    into->colls = victim->colls;
    into->cap_colls = victim->cap_colls;
    into->amend = victim->amend;
    into->cap_amend = victim->cap_amend;
    memset(victim, 0, sizeof(*victim));
    return true;
}

/* Memory for a new frame in slot f: within the budget, by freeing frames
 * that are not open; DIAG_SLOT_FULL when only open ones are left (none
 * open: the frame is allowed anyway, one step must fit). */
static int make_room(struct diag_steps *w, struct diag_frame *f)
{
    size_t need = (size_t)w->ranks * DIAG_FRAME_RANK_BYTES;
    size_t have = diag_frame_bytes(f);
    size_t extra = need > have ? need - have : 0;

    while (extra && diag_steps_bytes(w) + extra > w->max_bytes) {
        if (!release_one(w, f))
            return w->open ? DIAG_SLOT_FULL : DIAG_SLOT_OPEN;
        have = diag_frame_bytes(f);
        extra = need > have ? need - have : 0;
    }
    return DIAG_SLOT_OPEN;
}

static int late_slot(struct diag_steps *w, uint64_t step, struct diag_frame **f)
{
    struct diag_frame *k = &w->frames[step % w->n];

    *f = k->used && k->closed && k->step == step && step + w->keep >= w->next ? k : NULL;
    return DIAG_SLOT_LATE;
}

int diag_steps_gone_why(const struct diag_steps *w, uint64_t step)
{
    return step < w->first ? 2 : step + w->keep < w->next ? 1 : 0;
}

int diag_steps_slot(struct diag_steps *w, uint64_t step, uint64_t now_ns, struct diag_frame **f)
{
    if (!w->started) {
        w->started = true;
        w->first = step;
        w->next = step;
        w->newest = step;
    }
    if (step < w->next)
        return late_slot(w, step, f);
    struct diag_frame *s = &w->frames[step % w->n];
    while (s->used && s->step != step && !s->closed) {
        int err = grow(w);
        if (err == -ENOSPC)
            return DIAG_SLOT_FULL;
        if (err)
            return err;
        s = &w->frames[step % w->n];
    }
    if (s->used && s->step == step) {
        *f = s;
        return DIAG_SLOT_OPEN;
    }
    s->used = false; /* a kept frame of an older step gives way */
    int r = make_room(w, s);
    if (r != DIAG_SLOT_OPEN)
        return r;
    if (diag_frame_reserve(s, w->ranks))
        return -ENOMEM;
    diag_frame_reset(s, step, now_ns);
    w->open++;
    if (step > w->newest)
        w->newest = step;
    *f = s;
    return DIAG_SLOT_OPEN;
}

struct diag_frame *diag_steps_oldest(struct diag_steps *w)
{
    struct diag_frame *best = NULL;

    if (!w->open)
        return NULL;
    for (uint64_t s = w->next; s < w->next + w->n; s++) { /* usually the first */
        struct diag_frame *f = &w->frames[s % w->n];
        if (f->used && !f->closed && f->step == s)
            return f;
    }
    for (uint32_t i = 0; i < w->n; i++) { /* open steps far apart */
        struct diag_frame *f = &w->frames[i];
        if (f->used && !f->closed && (!best || f->step < best->step))
            best = f;
    }
    return best;
}

struct diag_frame *diag_steps_ready(struct diag_steps *w, uint64_t now_ns, uint32_t expect,
                                    uint64_t mark, uint64_t timeout_ns, uint64_t force_upto,
                                    enum diag_close_reason force_reason,
                                    enum diag_close_reason *reason)
{
    struct diag_frame *f = diag_steps_oldest(w);

    if (!f)
        return NULL;
    if (expect > 0 && f->reported >= expect)
        *reason = DIAG_CLOSE_COMPLETE;
    else if (f->step < mark)
        *reason = DIAG_CLOSE_WATERMARK;
    else if (now_ns >= f->first_ns + timeout_ns)
        *reason = DIAG_CLOSE_TIMEOUT;
    else if (f->step < force_upto)
        *reason = force_reason;
    else
        return NULL;
    return f;
}

void diag_steps_closed(struct diag_steps *w, struct diag_frame *f, uint64_t close_seq)
{
    f->closed = true;
    f->close_seq = close_seq;
    f->n_amend = 0;
    if (!w->keep)
        f->used = false;
    w->open--;
    w->next = f->step + 1;
}
