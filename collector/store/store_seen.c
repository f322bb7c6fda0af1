/* Distinct step records: JobInfo.rank_steps counts each (job, step, rank)
 * once, so an agent that replays steps under new sequence numbers (a new
 * epoch after losing its spool, the same recording sent twice) stores
 * nothing twice (the key is the same) and counts nothing twice.
 *
 * Per job, per rank, a ring of the last SEEN_WINDOW steps answers from
 * memory whether a step is already stored. A step below the ring, or at or
 * below the job's floor (the last step the job had in the store when this
 * process first saw it: what an earlier run stored is not in the rings), is
 * looked up in the DB. Marks made while a batch is staged are logged, and
 * undone when its write fails. Ranks are kept in chunks of SEEN_CHUNK, so a
 * job costs memory for the ranks it has, not for its highest rank id.
 * Retention does not clear the rings: a step it removed while still in its
 * rank's ring (only with a retention shorter than the ring's last steps) is
 * stored again if resent but not counted again. A job retention removes
 * entirely is forgotten. Everything runs under s->lock (store_db.h).
 */
#include "collector/store/store_seen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "common/array.h"

#define SEEN_WINDOW 512 /* steps per rank answered from memory */
#define SEEN_CHUNK 1024 /* ranks per chunk */

struct seen_rank {
    uint64_t top; /* 1 + the highest step marked; 0: none yet */
    uint64_t bits[SEEN_WINDOW / 64];
};

struct seen_job {
    char *job;
    uint64_t floor; /* steps below it may be in the store from before */
    struct seen_rank ***chunks;
    size_t n_chunks;
};

struct seen_mark {
    struct seen_rank *rank;
    uint64_t step;
};

static void seen_job_free(struct seen_job *j)
{
    for (size_t c = 0; j && c < j->n_chunks; c++) {
        for (size_t r = 0; j->chunks[c] && r < SEEN_CHUNK; r++)
            free(j->chunks[c][r]);
        free(j->chunks[c]);
    }
    if (j) {
        free(j->chunks);
        free(j->job);
    }
    free(j);
}

/* free_fn of s->seen.jobs: the node and its tracker. */
static void seen_node_free(void *p)
{
    struct kv_node *n = p;

    seen_job_free(n->v.seen);
    free(n);
}

/* The job's tracker, created on first use with its floor from the job cache. */
static struct seen_job *seen_job_get(struct store *s, const char *job)
{
    size_t jl = strlen(job);
    struct kv_node *n, *c;
    struct seen_job *j;
    bool created;

    if (s->seen.last && strcmp(s->seen.last->job, job) == 0)
        return s->seen.last;
    n = store_kv_get(&s->seen.jobs, job, jl, &created);
    if (!n)
        return NULL;
    if (!created)
        return s->seen.last = n->v.seen;
    j = calloc(1, sizeof(*j));
    if (!j || !(j->job = strdup(job))) {
        free(j);
        store_kv_remove(&s->seen.jobs, n);
        return NULL;
    }
    c = store_kv_find(&s->jobs, job, jl);
    j->floor = c ? c->v.job->last_step + 1 : 0;
    n->v.seen = j;
    return s->seen.last = j;
}

static struct seen_rank *seen_rank_get(struct seen_job *j, uint32_t rank)
{
    size_t c = rank / SEEN_CHUNK, i = rank % SEEN_CHUNK;

    if (c >= j->n_chunks) {
        struct seen_rank ***grown = realloc(j->chunks, (c + 1) * sizeof(*grown));
        if (!grown)
            return NULL;
        memset(grown + j->n_chunks, 0, (c + 1 - j->n_chunks) * sizeof(*grown));
        j->chunks = grown;
        j->n_chunks = c + 1;
    }
    if (!j->chunks[c] && !(j->chunks[c] = calloc(SEEN_CHUNK, sizeof(**j->chunks))))
        return NULL;
    if (!j->chunks[c][i])
        j->chunks[c][i] = calloc(1, sizeof(***j->chunks));
    return j->chunks[c][i];
}

static bool bit_get(const struct seen_rank *r, uint64_t step)
{
    return r->bits[(step % SEEN_WINDOW) / 64] >> (step % 64) & 1;
}

static void bit_put(struct seen_rank *r, uint64_t step, bool on)
{
    uint64_t m = UINT64_C(1) << (step % 64);

    if (on)
        r->bits[(step % SEEN_WINDOW) / 64] |= m;
    else
        r->bits[(step % SEEN_WINDOW) / 64] &= ~m;
}

static bool in_window(const struct seen_rank *r, uint64_t step)
{
    return step < r->top && r->top - step <= SEEN_WINDOW;
}

/* Move the ring up so that it ends at step: the steps it leaves behind are
 * forgotten (a DB read answers for them from now on). */
static void seen_advance(struct seen_rank *r, uint64_t step)
{
    if (step + 1 - r->top >= SEEN_WINDOW || r->top == 0)
        memset(r->bits, 0, sizeof(r->bits));
    else
        for (uint64_t k = r->top; k <= step; k++)
            bit_put(r, k, false);
    r->top = step + 1;
}

/* The answer of the DB (and of this batch's earlier DB-checked records). */
static int seen_in_db(struct store *s, const uint8_t *key, size_t klen, char *err, size_t errlen)
{
    char *rerr = NULL, *v;
    size_t vl = 0;
    bool created;

    if (!store_kv_get(&s->seen.batch_keys, key, klen, &created)) {
        store_set_err(err, errlen, "ingest: out of memory");
        return -ENOMEM;
    }
    if (!created)
        return 0;
    v = rocksdb_get_cf(s->db, s->ro, s->cf[CF_STEPS], (const char *)key, klen, &vl, &rerr);
    if (rerr)
        return store_rocks_fail(rerr, err, errlen, "read");
    free(v);
    return v ? 0 : 1;
}

int store_seen_mark(struct store *s, const char *job, uint64_t step, uint32_t rank,
                    const uint8_t *key, size_t klen, char *err, size_t errlen)
{
    struct seen_job *j = seen_job_get(s, job);
    struct seen_rank *r = j ? seen_rank_get(j, rank) : NULL;
    int fresh;

    if (!r || array_reserve((void **)&s->seen.undo, &s->seen.cap_undo, s->seen.n_undo + 1,
                            sizeof(*s->seen.undo))) {
        store_set_err(err, errlen, "ingest: out of memory");
        return -ENOMEM;
    }
    if (step == UINT64_MAX || (r->top && !in_window(r, step) && step < r->top))
        return seen_in_db(s, key, klen, err, errlen); /* below the ring */
    if (step >= r->top || r->top == 0)
        seen_advance(r, step);
    else if (bit_get(r, step))
        return 0;
    fresh = step >= j->floor ? 1 : seen_in_db(s, key, klen, err, errlen);
    if (fresh >= 0)
        bit_put(r, step, true); /* stored now, or already */
    if (fresh > 0)
        s->seen.undo[s->seen.n_undo++] = (struct seen_mark){r, step};
    return fresh;
}

void store_seen_end_batch(struct store *s, bool committed)
{
    for (size_t i = 0; !committed && i < s->seen.n_undo; i++) {
        struct seen_mark *m = &s->seen.undo[i];

        if (in_window(m->rank, m->step))
            bit_put(m->rank, m->step, false);
    }
    s->seen.n_undo = 0;
    store_kv_clear(&s->seen.batch_keys, free);
}

void store_seen_forget(struct store *s, const char *job)
{
    struct kv_node *n = store_kv_find(&s->seen.jobs, job, strlen(job));
    struct seen_job *j = n ? n->v.seen : NULL;

    if (!n)
        return;
    if (s->seen.last == j)
        s->seen.last = NULL;
    seen_job_free(j);
    store_kv_remove(&s->seen.jobs, n);
}

void store_seen_free(struct store *s)
{
    store_kv_clear(&s->seen.jobs, seen_node_free);
    store_kv_clear(&s->seen.batch_keys, free);
    free(s->seen.undo);
    s->seen = (struct seen){0};
}
