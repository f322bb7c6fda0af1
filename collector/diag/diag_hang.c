/* Hangs: see diag_hang.h. */
#include "collector/diag/diag_hang.h"

#include <string.h>

#include "proto/argus.pb-c.h"

#define HANG_CANDIDATES 16 /* communicators looked at per call */

const struct diag_live_comm *diag_hang_comm(const struct diag_live_rank *r, uint64_t comm_id)
{
    for (uint8_t i = 0; i < r->n_comms; i++)
        if (r->comms[i].comm_id == comm_id)
            return &r->comms[i];
    return NULL;
}

bool diag_hang_inside(const struct diag_live_comm *c)
{
    /* By number when an end is known: collectives are asynchronous, so
     * DDP enqueues bucket k before k - 1 finishes, and k - 1's end comes
     * after k's entry while the rank is inside k. With no end known (NCCL
     * without CUPTI), by time: inside its last call. */
    if (!c->entered_ns)
        return false;
    return c->done_ns ? c->entered_seq > c->done_seq : true;
}

/* A status that can say what its rank is doing now. */
static bool live_status(const struct diag_live_rank *r)
{
    return r->has_status && !r->exited && !r->moving;
}

/* How long r has waited in c at receive time now: the sampled wait plus
 * the time since the status came. */
static uint64_t wait_of(const struct diag_live_rank *r, const struct diag_live_comm *c,
                        uint64_t now_ns)
{
    uint64_t sampled = r->at_ns > c->entered_ns ? r->at_ns - c->entered_ns : 0;

    return sampled + (now_ns > r->recv_ns ? now_ns - r->recv_ns : 0);
}

static bool uses(const struct diag_live_rank *r, uint64_t comm_id)
{
    for (uint8_t i = 0; i < r->n_used; i++)
        if (r->used[i] == comm_id)
            return true;
    return diag_hang_comm(r, comm_id) != NULL;
}

/* The communicators some rank waits in past the bound, longest first
 * unordered; returns how many (at most HANG_CANDIDATES). */
static uint32_t candidates(const struct diag_live_rank *ranks, uint32_t n, uint64_t now_ns,
                           uint64_t bound_ns, uint64_t *ids)
{
    uint32_t count = 0;

    for (uint32_t r = 0; r < n; r++) {
        if (!live_status(&ranks[r]))
            continue;
        for (uint8_t i = 0; i < ranks[r].n_comms; i++) {
            const struct diag_live_comm *c = &ranks[r].comms[i];
            bool known = false;
            if (!diag_hang_inside(c) || wait_of(&ranks[r], c, now_ns) < bound_ns)
                continue;
            for (uint32_t k = 0; k < count && !known; k++)
                known = ids[k] == c->comm_id;
            if (!known && count < HANG_CANDIDATES)
                ids[count++] = c->comm_id;
        }
    }
    return count;
}

/* The call the waiters of comm are in: the highest entered sequence of a
 * rank inside it. */
static void hang_call(const struct diag_live_rank *ranks, uint32_t n, uint64_t comm,
                      struct diag_hang *h)
{
    memset(h, 0, sizeof(*h));
    h->comm_id = comm;
    for (uint32_t r = 0; r < n; r++) {
        const struct diag_live_comm *c =
            live_status(&ranks[r]) ? diag_hang_comm(&ranks[r], comm) : NULL;
        if (!c || !diag_hang_inside(c))
            continue;
        h->seq_local |= c->seq_local;
        if (c->entered_seq >= h->seq) {
            h->seq = c->entered_seq;
            h->name_id = c->name_id;
        }
    }
}

static void add_suspect(struct diag_hang *h, uint32_t rank)
{
    if (h->n_suspects < DIAG_HANG_NAMED)
        h->suspects[h->n_suspects++] = rank;
    else
        h->more_suspects++;
}

/* Is member r behind the call of h (not entered it)? */
static bool behind(const struct diag_live_rank *r, const struct diag_hang *h)
{
    const struct diag_live_comm *c = diag_hang_comm(r, h->comm_id);

    if (!c)
        return true; /* seen using the communicator, no progress on it now */
    return h->seq_local ? !diag_hang_inside(c) : c->entered_seq < h->seq;
}

bool diag_hang_waits(const struct diag_live_rank *r, const struct diag_hang *h)
{
    const struct diag_live_comm *c = live_status(r) ? diag_hang_comm(r, h->comm_id) : NULL;

    return c && diag_hang_inside(c) && (h->seq_local || c->entered_seq == h->seq);
}

/* r waits inside a call on a communicator other than comm: it is blocked
 * behind someone else, not the one who keeps comm waiting (a chain of
 * waits ends at a rank outside every collective). */
static bool inside_other(const struct diag_live_rank *r, uint64_t comm)
{
    for (uint8_t i = 0; i < r->n_comms; i++)
        if (r->comms[i].comm_id != comm && diag_hang_inside(&r->comms[i]))
            return true;
    return false;
}

/* Count the waiters of h and name its suspects. */
static void hang_members(const struct diag_live_rank *ranks, uint32_t n, uint64_t now_ns,
                         struct diag_hang *h, uint32_t *no_status)
{
    *no_status = 0;
    for (uint32_t r = 0; r < n; r++) {
        const struct diag_live_rank *lr = &ranks[r];
        if (!lr->seen || !uses(lr, h->comm_id))
            continue;
        h->members++;
        const struct diag_live_comm *c = diag_hang_comm(lr, h->comm_id);
        if (diag_hang_waits(lr, h)) {
            uint64_t w = wait_of(lr, c, now_ns);
            if (!h->waiters++ || c->entered_ns < h->since_ns) {
                h->since_ns = c->entered_ns;
                h->first_waiter = r;
            }
            h->wait_ns = w > h->wait_ns ? w : h->wait_ns;
        } else if (live_status(lr) && behind(lr, h) && !inside_other(lr, h->comm_id)) {
            add_suspect(h, r);
        } else if (!lr->has_status) {
            (*no_status)++;
        }
    }
}

/* A process that cannot finish a collective it is inside: stopped, or in
 * an uninterruptible wait (its waiting peers sleep in the library). */
static bool cannot_run(const struct diag_live_rank *r)
{
    return r->state == ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED ||
           r->state == ARGUS__V1__PROC_STATE__PROC_STATE_DISK;
}

/* Every member of h is inside its call: name those that cannot run, when
 * they are at most half of the members and so stand out. */
static void name_stuck(const struct diag_live_rank *ranks, uint32_t n, struct diag_hang *h)
{
    uint32_t stuck = 0;

    for (uint32_t r = 0; r < n; r++)
        stuck += diag_hang_waits(&ranks[r], h) && cannot_run(&ranks[r]);
    if (!stuck || stuck * 2 > h->members || stuck >= h->waiters)
        return;
    for (uint32_t r = 0; r < n; r++)
        if (diag_hang_waits(&ranks[r], h) && cannot_run(&ranks[r]))
            add_suspect(h, r);
    h->waiters -= stuck;
    h->stuck = true;
}

/* Several members behind h's call, some of them unable to run (stopped,
 * in an uninterruptible wait): the others are behind because they wait on
 * those (inside an earlier collective that cannot finish without them), so
 * only those are named. Nothing changes when none or all of them cannot
 * run, or when more were behind than h names. */
static void narrow_to_stuck(const struct diag_live_rank *ranks, struct diag_hang *h)
{
    uint32_t kept = 0;

    if (h->more_suspects)
        return;
    for (uint32_t i = 0; i < h->n_suspects; i++)
        kept += cannot_run(&ranks[h->suspects[i]]);
    if (!kept || kept == h->n_suspects)
        return;
    kept = 0;
    for (uint32_t i = 0; i < h->n_suspects; i++)
        if (cannot_run(&ranks[h->suspects[i]]))
            h->suspects[kept++] = h->suspects[i];
    h->n_suspects = kept;
}

/* Members of h with no status, named when no member with a status is
 * behind. */
static void name_silent(const struct diag_live_rank *ranks, uint32_t n, struct diag_hang *h)
{
    for (uint32_t r = 0; r < n; r++)
        if (ranks[r].seen && !ranks[r].has_status && uses(&ranks[r], h->comm_id))
            add_suspect(h, r);
    h->no_status = true;
}

bool diag_hang_find(const struct diag_live_rank *ranks, uint32_t n, uint64_t now_ns,
                    uint64_t bound_ns, struct diag_hang *out)
{
    uint64_t ids[HANG_CANDIDATES];
    uint32_t count = candidates(ranks, n, now_ns, bound_ns, ids);
    bool found = false;

    for (uint32_t i = 0; i < count; i++) {
        struct diag_hang h;
        uint32_t no_status;
        hang_call(ranks, n, ids[i], &h);
        hang_members(ranks, n, now_ns, &h, &no_status);
        if (!h.waiters || h.wait_ns < bound_ns)
            continue;
        if (h.n_suspects > 1)
            narrow_to_stuck(ranks, &h);
        if (!h.n_suspects)
            name_stuck(ranks, n, &h);
        if (!h.n_suspects && no_status && no_status * 2 < h.members)
            name_silent(ranks, n, &h);
        if (h.n_suspects && (!found || h.wait_ns > out->wait_ns)) {
            *out = h;
            found = true;
        }
    }
    return found;
}
