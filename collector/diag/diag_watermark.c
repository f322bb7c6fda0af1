/* Per-stream progress and the job's watermark: see diag_watermark.h. */
#include "collector/diag/diag_watermark.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/name_id.h"

void diag_watermark_init(struct diag_watermark *w, uint64_t hold_ns)
{
    memset(w, 0, sizeof(*w));
    w->hold_ns = hold_ns ? hold_ns : 10000000000ULL;
    w->live = UINT32_MAX;
}

void diag_watermark_free(struct diag_watermark *w)
{
    for (uint32_t i = 0; i < w->n_streams; i++)
        free(w->streams[i].id);
    free(w->streams);
    free(w->stream_slots);
    free(w->rank);
    free(w->tree);
    diag_watermark_init(w, w->hold_ns);
}

/* The progress tree: every node aggregates the seen ranks below it, so that
 * the watermark takes whole subtrees of ranks that all hold it (or none)
 * without visiting their ranks. */
static const struct diag_wm_node no_rank = {UINT64_MAX, 0, UINT64_MAX, 0};

static struct diag_wm_node leaf_of(const struct diag_wm_rank *r)
{
    if (!r->last_recv_ns)
        return no_rank;
    return (struct diag_wm_node){r->progress_ns, r->progress_ns, r->next, 1};
}

static struct diag_wm_node join(const struct diag_wm_node *a, const struct diag_wm_node *b)
{
    return (struct diag_wm_node){
        .min_progress = a->min_progress < b->min_progress ? a->min_progress : b->min_progress,
        .max_progress = a->max_progress > b->max_progress ? a->max_progress : b->max_progress,
        .min_next = a->min_next < b->min_next ? a->min_next : b->min_next,
        .seen = a->seen + b->seen,
    };
}

static bool same(const struct diag_wm_node *a, const struct diag_wm_node *b)
{
    return a->min_progress == b->min_progress && a->max_progress == b->max_progress &&
           a->min_next == b->min_next && a->seen == b->seen;
}

/* Rank i changed: its leaf and the nodes above it, up to one that stays. */
static void tree_set(struct diag_watermark *w, uint32_t i)
{
    uint32_t n = w->leaves + i;

    w->tree[n] = leaf_of(&w->rank[i]);
    for (n /= 2; n; n /= 2) {
        struct diag_wm_node up = join(&w->tree[2 * n], &w->tree[2 * n + 1]);
        if (same(&up, &w->tree[n]))
            break;
        w->tree[n] = up;
    }
}

/* A tree for ranks [0, cap) built from the ranks. 0 or -ENOMEM. */
static int tree_build(struct diag_watermark *w, uint32_t cap)
{
    uint32_t leaves = 1;

    while (leaves < cap)
        leaves *= 2;
    struct diag_wm_node *t = malloc(2 * (size_t)leaves * sizeof(*t));
    if (!t)
        return -ENOMEM;
    for (uint32_t i = 0; i < leaves; i++)
        t[leaves + i] = i < w->cap ? leaf_of(&w->rank[i]) : no_rank;
    for (uint32_t n = leaves - 1; n; n--)
        t[n] = join(&t[2 * n], &t[2 * n + 1]);
    free(w->tree);
    w->tree = t;
    w->leaves = leaves;
    return 0;
}

/* Ranks under node n that made progress at or after from: how many, the
 * lowest next among them. */
static void tree_live(const struct diag_watermark *w, uint32_t n, uint64_t from, uint32_t *live,
                      uint64_t *mark)
{
    const struct diag_wm_node *t = &w->tree[n];

    if (!t->seen || t->max_progress < from)
        return;
    if (t->min_progress >= from) {
        *live += t->seen;
        if (t->min_next < *mark)
            *mark = t->min_next;
        return;
    }
    tree_live(w, 2 * n, from, live, mark);
    tree_live(w, 2 * n + 1, from, live, mark);
}

int diag_watermark_reserve(struct diag_watermark *w, uint32_t cap)
{
    if (cap <= w->cap)
        return 0;
    if (array_grow_zeroed((void **)&w->rank, w->cap, cap, sizeof(*w->rank)))
        return -ENOMEM;
    for (uint32_t i = w->cap; i < cap; i++)
        w->rank[i].stream = DIAG_WM_NO_STREAM;
    if (cap > w->leaves && tree_build(w, cap))
        return -ENOMEM; /* the new ranks are not ours yet: cap stays */
    w->cap = cap;
    return 0;
}

/* The slot of id in the stream hash: its stream's, or the empty one where
 * it would go. */
static uint32_t stream_slot(const struct diag_watermark *w, const char *id)
{
    uint32_t mask = w->n_stream_slots - 1;
    uint32_t i = (uint32_t)name_id(id) & mask;

    while (w->stream_slots[i] && strcmp(w->streams[w->stream_slots[i] - 1].id, id) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Room in the hash for one more stream (load under a half). 0 or -ENOMEM. */
static int stream_hash_reserve(struct diag_watermark *w)
{
    if (2 * (w->n_streams + 1) < w->n_stream_slots)
        return 0;
    uint32_t n = w->n_stream_slots ? 2 * w->n_stream_slots : 16;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    free(w->stream_slots);
    w->stream_slots = slots;
    w->n_stream_slots = n;
    for (uint32_t s = 0; s < w->n_streams; s++)
        w->stream_slots[stream_slot(w, w->streams[s].id)] = s + 1;
    return 0;
}

int diag_watermark_stream(struct diag_watermark *w, const char *id)
{
    uint32_t slot;

    if (w->n_streams) {
        slot = stream_slot(w, id);
        if (w->stream_slots[slot])
            return (int)w->stream_slots[slot] - 1;
    }
    if (stream_hash_reserve(w))
        return -ENOMEM;
    if (w->n_streams == w->cap_streams) {
        uint32_t cap = w->cap_streams ? w->cap_streams * 2 : 8;
        if (array_grow_zeroed((void **)&w->streams, w->cap_streams, cap, sizeof(*w->streams)))
            return -ENOMEM;
        w->cap_streams = cap;
    }
    char *copy = strdup(id);
    if (!copy)
        return -ENOMEM;
    w->streams[w->n_streams] = (struct diag_wm_stream){.id = copy};
    w->stream_slots[stream_slot(w, id)] = w->n_streams + 1;
    return (int)w->n_streams++;
}

bool diag_watermark_record(struct diag_watermark *w, uint32_t stream, uint32_t rank, uint64_t step,
                           uint64_t recv_ns)
{
    struct diag_wm_rank *r = &w->rank[rank];
    bool first = r->last_recv_ns == 0;

    w->seen += first;

    if (!w->first_ns)
        w->first_ns = recv_ns;
    if (recv_ns > w->last_ns)
        w->last_ns = recv_ns;
    if (step > w->newest_step)
        w->newest_step = step;
    r->last_recv_ns = recv_ns ? recv_ns : 1;
    r->silent = false;
    if (step + 1 > r->next) {
        r->next = step + 1;
        r->progress_ns = recv_ns;
    }
    if (stream < w->n_streams) {
        r->stream = stream;
        if (recv_ns > w->streams[stream].last_recv_ns)
            w->streams[stream].last_recv_ns = recv_ns;
        w->streams[stream].silent = false;
    }
    if (r->next > w->delivered)
        w->delivered = r->next;
    tree_set(w, rank);
    return first;
}

void diag_watermark_update(struct diag_watermark *w, uint64_t now_ns)
{
    bool grace = w->first_ns && now_ns < w->first_ns + w->hold_ns;
    uint64_t mark = UINT64_MAX;
    uint32_t live = 0;

    if (grace && w->world) { /* ranks not started yet: wait for them */
        /* by count: a rank's index is its slot, not its number (diag_slots.h) */
        uint32_t unseen = w->world > w->seen ? w->world - w->seen : 0;
        live += unseen;
        mark = unseen ? 0 : mark;
    }
    /* live: progress within hold_ns, now_ns <= progress_ns + hold_ns */
    if (w->tree)
        tree_live(w, 1, now_ns > w->hold_ns ? now_ns - w->hold_ns : 0, &live, &mark);
    if (grace && !w->world) { /* ranks may still join: nothing is complete */
        live = UINT32_MAX;
        mark = 0;
    }
    w->live = live;
    w->mark = mark == UINT64_MAX ? w->delivered : mark;
}

double diag_watermark_lag_s(const struct diag_watermark *w, uint64_t oldest_first_ns,
                            uint64_t now_ns)
{
    if (!oldest_first_ns || now_ns <= oldest_first_ns)
        return 0;
    return (double)(now_ns - oldest_first_ns) / 1e9;
}
