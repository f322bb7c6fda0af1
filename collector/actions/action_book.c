/* The action book: see action_book.h. */
#include "collector/actions/action_book.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void action_book_init(struct action_book *b, uint32_t max, uint64_t window_ns)
{
    *b = (struct action_book){0};
    b->max = max < 1 ? 1 : max > ACTION_BOOK_MAX_RUNS ? ACTION_BOOK_MAX_RUNS : max;
    b->window_ns = window_ns;
}

void action_book_free_action(Argus__V1__Action *a)
{
    /* every string is malloc'd or protobuf_c_empty_string, which it skips */
    if (a)
        argus__v1__action__free_unpacked(a, NULL);
}

void action_book_clear(struct action_book *b)
{
    for (size_t i = 0; i < b->n; i++)
        action_book_free_action(b->items[i]);
    free(b->items);
    b->items = NULL;
    b->n = b->cap = 0;
}

bool action_book_stands(const Argus__V1__Action *a)
{
    return strcmp(a->kind, "drain") == 0 && !a->undone &&
           (strcmp(a->outcome, "done") == 0 || strcmp(a->outcome, "would_run") == 0);
}

/* Forget the runs that left the window ending at now_ns. */
static void action_book_prune(struct action_book *b, uint64_t now_ns)
{
    size_t keep = 0;

    while (keep < b->nruns && b->runs[keep] + b->window_ns <= now_ns)
        keep++;
    memmove(b->runs, b->runs + keep, (b->nruns - keep) * sizeof(b->runs[0]));
    b->nruns -= keep;
}

enum action_verdict action_book_decide(struct action_book *b, const char *node, int cause,
                                       bool dry_run, uint64_t now_ns)
{
    size_t inside = 0;

    for (size_t i = b->n; i-- > 0;) {
        const Argus__V1__Action *a = b->items[i];
        if (action_book_stands(a) && a->dry_run == dry_run && (int)a->cause == cause &&
            strcmp(a->node, node) == 0)
            return ACTION_STANDING;
    }
    if (dry_run)
        return ACTION_RUN;
    if (b->open)
        return ACTION_BREAKER;
    for (size_t i = 0; i < b->nruns; i++) /* decide is pure: count, do not prune */
        if (b->runs[i] + b->window_ns > now_ns)
            inside++;
    return inside >= b->max ? ACTION_TRIP : ACTION_RUN;
}

void action_book_note_run(struct action_book *b, uint64_t now_ns)
{
    action_book_prune(b, now_ns);
    if (b->nruns == ACTION_BOOK_MAX_RUNS) { /* max <= this: the oldest cannot matter */
        memmove(b->runs, b->runs + 1, (b->nruns - 1) * sizeof(b->runs[0]));
        b->nruns--;
    }
    b->runs[b->nruns++] = now_ns;
}

void action_book_trip(struct action_book *b, const char *reason, uint64_t now_ns)
{
    if (b->open)
        return;
    b->open = true;
    b->opened_ns = now_ns;
    snprintf(b->reason, sizeof(b->reason), "%s", reason ? reason : "");
}

bool action_book_reset(struct action_book *b)
{
    bool was = b->open;

    b->open = false;
    b->reason[0] = '\0';
    b->opened_ns = 0;
    b->nruns = 0;
    return was;
}

/* Past ACTION_BOOK_KEEP: drop the oldest record that does not stand (all
 * stand: the oldest). */
static void action_book_trim(struct action_book *b)
{
    size_t drop = 0;

    while (drop < b->n && action_book_stands(b->items[drop]))
        drop++;
    if (drop == b->n)
        drop = 0;
    action_book_free_action(b->items[drop]);
    memmove(b->items + drop, b->items + drop + 1, (b->n - drop - 1) * sizeof(b->items[0]));
    b->n--;
}

int action_book_add(struct action_book *b, Argus__V1__Action *a)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        Argus__V1__Action **items = realloc(b->items, cap * sizeof(*items));
        if (!items)
            return -ENOMEM;
        b->items = items;
        b->cap = cap;
    }
    b->items[b->n++] = a;
    if (b->n > ACTION_BOOK_KEEP)
        action_book_trim(b);
    return 0;
}

Argus__V1__Action *action_book_find(struct action_book *b, const char *id)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->items[i]->id, id) == 0)
            return b->items[i];
    return NULL;
}

void action_book_breaker(const struct action_book *b, Argus__V1__ActionBreaker *out)
{
    argus__v1__action_breaker__init(out);
    out->open = b->open;
    out->reason = (char *)b->reason;
    out->opened_unix_ns = b->opened_ns;
    out->recent_unix_ns = (uint64_t *)b->runs;
    out->n_recent_unix_ns = b->nruns;
}

void action_book_set_breaker(struct action_book *b, const Argus__V1__ActionBreaker *in)
{
    size_t skip = in->n_recent_unix_ns > ACTION_BOOK_MAX_RUNS
                      ? in->n_recent_unix_ns - ACTION_BOOK_MAX_RUNS
                      : 0;

    b->open = in->open;
    snprintf(b->reason, sizeof(b->reason), "%s", in->reason ? in->reason : "");
    b->opened_ns = in->opened_unix_ns;
    b->nruns = in->n_recent_unix_ns - skip;
    if (b->nruns) /* recent_unix_ns is NULL when empty */
        memcpy(b->runs, in->recent_unix_ns + skip, b->nruns * sizeof(b->runs[0]));
}
