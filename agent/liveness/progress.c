/* The progress table and its status rule (see progress.h). */
#include "agent/liveness/progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct progress {
    struct progress_options o;
    struct progress_rank *ranks;
    size_t n, cap;
};

struct progress *progress_new(const struct progress_options *o)
{
    struct progress *p = calloc(1, sizeof(*p));

    if (p)
        p->o = *o;
    return p;
}

void progress_free(struct progress *p)
{
    if (!p)
        return;
    free(p->ranks);
    free(p);
}

struct progress_rank *progress_find(struct progress *p, uint32_t pid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->ranks[i].pid == pid)
            return &p->ranks[i];
    return NULL;
}

size_t progress_count(const struct progress *p)
{
    return p->n;
}

struct progress_rank *progress_at(struct progress *p, size_t i)
{
    return &p->ranks[i];
}

/* The entry of pid, added (untracked) when new. NULL when the table is full
 * or out of memory. */
static struct progress_rank *progress_get(struct progress *p, uint32_t pid)
{
    struct progress_rank *r = progress_find(p, pid);

    if (r)
        return r;
    if (p->n == PROGRESS_MAX_RANKS)
        return NULL;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct progress_rank *grown = realloc(p->ranks, cap * sizeof(*grown));

        if (!grown)
            return NULL;
        p->ranks = grown;
        p->cap = cap;
    }
    r = &p->ranks[p->n++];
    memset(r, 0, sizeof(*r));
    r->pid = pid;
    return r;
}

int progress_track(struct progress *p, uint32_t pid, const char *job, uint32_t rank, uint32_t world,
                   uint64_t now)
{
    struct progress_rank *r = progress_get(p, pid);

    if (!r)
        return p->n == PROGRESS_MAX_RANKS ? -ENOSPC : -ENOMEM;
    if (!r->tracked && r->progress_ns < now)
        r->progress_ns = now;
    r->tracked = true;
    snprintf(r->job, sizeof(r->job), "%s", job);
    r->rank = rank;
    r->world = world;
    return 0;
}

/* The slot of communicator handle (the last one when all are taken). */
static struct progress_comm *progress_comm(struct progress_rank *r, uint64_t handle)
{
    for (uint32_t i = 0; i < r->ncomms; i++)
        if (r->comms[i].handle == handle)
            return &r->comms[i];
    if (r->ncomms == PROGRESS_MAX_COMMS)
        return &r->comms[PROGRESS_MAX_COMMS - 1];
    r->comms[r->ncomms] = (struct progress_comm){.handle = handle, .last_seq = -1};
    return &r->comms[r->ncomms++];
}

static void progress_moved(struct progress_rank *r, uint64_t ns)
{
    if (ns > r->progress_ns)
        r->progress_ns = ns;
    r->progress_seen++;
}

static void progress_finished(struct progress_rank *r, struct progress_comm *c, uint64_t seq,
                              uint64_t done_ns)
{
    if (!c->done || seq >= c->done_seq) {
        c->done = true;
        c->done_seq = seq;
        c->done_ns = done_ns;
    }
    if (done_ns > r->last_call_ns)
        r->last_call_ns = done_ns;
    progress_moved(r, done_ns);
}

void progress_call(struct progress *p, uint32_t pid, const struct progress_call *call)
{
    struct progress_rank *r = progress_get(p, pid);
    struct progress_comm *c;
    uint64_t seq;

    if (!r)
        return;
    c = progress_comm(r, call->handle);
    /* numbered as stepinfer numbers Collective.seq */
    c->last_seq = call->lib_seq >= 0 ? call->lib_seq : c->last_seq + 1;
    seq = (uint64_t)c->last_seq;
    if (call->group)
        c->group = call->group;
    if (!c->entered || seq >= c->entered_seq) {
        c->entered = true;
        c->entered_shared = call->lib_seq >= 0;
        c->entered_seq = seq;
        c->entered_ns = call->enter_ns;
        c->name_id = call->name_id;
    }
    if (call->enter_ns > r->last_call_ns)
        r->last_call_ns = call->enter_ns;
    progress_moved(r, call->enter_ns);
    if (call->done_ns)
        progress_finished(r, c, seq, call->done_ns);
}

void progress_done(struct progress *p, uint32_t pid, uint64_t handle, int64_t lib_seq,
                   uint64_t done_ns)
{
    struct progress_rank *r = progress_find(p, pid);

    if (!r)
        return;
    for (uint32_t i = 0; i < r->ncomms; i++)
        if (r->comms[i].handle == handle) {
            if (lib_seq >= 0)
                progress_finished(r, &r->comms[i], (uint64_t)lib_seq, done_ns);
            else
                progress_moved(r, done_ns);
            return;
        }
}

void progress_step(struct progress *p, uint32_t pid, uint64_t step, uint64_t now)
{
    struct progress_rank *r = progress_find(p, pid);

    if (!r)
        return;
    if (!r->has_step || step > r->last_step)
        r->last_step = step;
    r->has_step = true;
    progress_moved(r, now);
}

void progress_forget(struct progress *p, uint32_t pid)
{
    struct progress_rank *r = progress_find(p, pid);

    if (r)
        *r = p->ranks[--p->n];
}

enum progress_due progress_due(const struct progress *p, const struct progress_rank *r,
                               uint64_t now)
{
    if (!r->tracked || r->world == 1)
        return PROGRESS_DUE_NONE;
    if (r->stalled) {
        /* progress reported since the last status, whatever its time (a
         * call's report comes at its return, up to 2 s after it) */
        if (r->progress_seen != r->status_seen)
            return PROGRESS_DUE_MOVING;
        return now >= r->status_ns + p->o.interval_ns ? PROGRESS_DUE_STALLED : PROGRESS_DUE_NONE;
    }
    return now >= r->progress_ns + p->o.after_ns ? PROGRESS_DUE_STALLED : PROGRESS_DUE_NONE;
}

void progress_sent(struct progress_rank *r, enum progress_due due, uint64_t now)
{
    if (due == PROGRESS_DUE_MOVING) {
        r->stalled = false;
        return;
    }
    r->stalled = true;
    r->status_ns = now;
    r->status_seen = r->progress_seen;
}

const struct progress_comm *progress_last_comm(const struct progress_rank *r)
{
    const struct progress_comm *last = NULL;

    for (uint32_t i = 0; i < r->ncomms; i++)
        if (r->comms[i].entered && (!last || r->comms[i].entered_ns > last->entered_ns))
            last = &r->comms[i];
    return last;
}
