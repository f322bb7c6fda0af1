/* The drop table: a small array searched linearly. There are a few dozen
 * counters at most (reasons times local ranks), and drops_add runs per drop
 * event or batch, not per record. */
#include "agent/delivery/drops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

struct drops_counter {
    char *reason;
    char *job; /* NULL for node-level counters */
    int32_t rank;
    uint64_t total;
};

struct drops {
    struct drops_counter *c;
    size_t n, cap;
    uint64_t version;       /* drops_add calls */
    uint64_t saved_version; /* version at the last drops_saved */
};

struct drops *drops_new(void)
{
    return calloc(1, sizeof(struct drops));
}

void drops_free(struct drops *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->c[i].reason);
        free(d->c[i].job);
    }
    free(d->c);
    free(d);
}

static struct drops_counter *drops_find(const struct drops *d, const char *reason, const char *job,
                                        int32_t rank)
{
    for (size_t i = 0; i < d->n; i++) {
        struct drops_counter *c = &d->c[i];
        if (c->rank == rank && strcmp(c->reason, reason) == 0 &&
            strcmp(c->job ? c->job : "", job ? job : "") == 0)
            return c;
    }
    return NULL;
}

int drops_add(struct drops *d, const char *reason, const char *job, int32_t rank, uint64_t count)
{
    struct drops_counter *c = drops_find(d, reason, job, rank), fresh;

    if (c) {
        c->total += count;
        d->version++;
        return 0;
    }
    if (array_reserve((void **)&d->c, &d->cap, d->n + 1, sizeof(*d->c)))
        return -ENOMEM;
    fresh = (struct drops_counter){strdup(reason), job ? strdup(job) : NULL, rank, count};
    if (!fresh.reason || (job && !fresh.job)) {
        free(fresh.reason);
        free(fresh.job);
        return -ENOMEM;
    }
    d->c[d->n++] = fresh;
    d->version++;
    return 0;
}

uint64_t drops_get(const struct drops *d, const char *reason, const char *job, int32_t rank)
{
    const struct drops_counter *c = drops_find(d, reason, job, rank);

    return c ? c->total : 0;
}

size_t drops_count(const struct drops *d)
{
    return d->n;
}

void drops_foreach(const struct drops *d, drops_fn fn, void *ctx)
{
    for (size_t i = 0; i < d->n; i++)
        fn(ctx, d->c[i].reason, d->c[i].job, d->c[i].rank, d->c[i].total);
}

uint64_t drops_version(const struct drops *d)
{
    return d->version;
}

bool drops_changed(const struct drops *d)
{
    return d->version != d->saved_version;
}

void drops_saved(struct drops *d)
{
    d->saved_version = d->version;
}
