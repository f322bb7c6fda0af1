/* See sched_ends.h. A small unordered array: thread ends are rare (a rank's
 * threads live for the job) and held for milliseconds. */
#include "agent/probes/sched_ends.h"

#include <errno.h>
#include <stdlib.h>

#include "common/array.h"

static struct sched_end *find(struct sched_ends *e, uint32_t tgid, uint32_t tid)
{
    for (size_t i = 0; i < e->n; i++)
        if (e->v[i].d.tid == tid && e->v[i].d.tgid == tgid)
            return &e->v[i];
    return NULL;
}

static void drop(struct sched_ends *e, struct sched_end *x)
{
    *x = e->v[--e->n];
}

/* Room for one more: 0, or -ENOMEM (SCHED_ENDS_MAX held, or out of memory). */
static int reserve(struct sched_ends *e)
{
    if (e->n >= SCHED_ENDS_MAX)
        return -ENOMEM;
    return array_reserve((void **)&e->v, &e->cap, e->n + 1, sizeof(*e->v));
}

/* x's exit reading goes out at now; it is remembered to drop a late free. */
static int report(struct sched_ends *e, struct sched_end *x, uint64_t now,
                  struct argus_sched_delta *out)
{
    x->reported = 1;
    x->due_ns = now + SCHED_ENDS_KEEP_NS;
    e->from_exit++;
    *out = x->d;
    return 1;
}

static int add_exit(struct sched_ends *e, const struct argus_sched_delta *d, uint64_t now,
                    struct argus_sched_delta *out)
{
    struct sched_end *x = find(e, d->tgid, d->tid);
    struct sched_end held = {.d = *d, .due_ns = now + SCHED_ENDS_WAIT_NS};

    if (x && !x->reported) { /* its tid reused before the old one's free: that one goes now */
        report(e, x, now, out);
        *x = held;
        return 1;
    }
    if (!x) {
        if (reserve(e) < 0) {
            e->from_exit++;
            *out = *d;
            return 1;
        }
        x = &e->v[e->n++];
    }
    *x = held; /* a reported end of a reused tid is forgotten: its free cannot come now */
    return 0;
}

int sched_ends_add(struct sched_ends *e, const struct argus_sched_delta *d, uint64_t now,
                   struct argus_sched_delta *out)
{
    if (d->kind == ARGUS_SCHED_EXIT)
        return add_exit(e, d, now, out);
    if (d->kind != ARGUS_SCHED_FREE)
        return -EINVAL;
    struct sched_end *x = find(e, d->tgid, d->tid);
    int late = x && x->reported;

    if (x)
        drop(e, x);
    if (late) {
        e->late_frees++;
        return 0;
    }
    *out = *d;
    return 1;
}

int sched_ends_expire(struct sched_ends *e, uint64_t now, struct argus_sched_delta *out)
{
    for (size_t i = 0; i < e->n;) {
        struct sched_end *x = &e->v[i];

        if (now < x->due_ns) {
            i++;
        } else if (x->reported) {
            drop(e, x); /* the slot now holds another: look at i again */
        } else {
            return report(e, x, now, out);
        }
    }
    return 0;
}

int sched_ends_flush(struct sched_ends *e, struct argus_sched_delta *out)
{
    for (size_t i = 0; i < e->n; i++)
        if (!e->v[i].reported)
            return report(e, &e->v[i], e->v[i].due_ns, out); /* as if it came due */
    return 0;
}

size_t sched_ends_held(const struct sched_ends *e)
{
    size_t n = 0;

    for (size_t i = 0; i < e->n; i++)
        n += !e->v[i].reported;
    return n;
}

void sched_ends_free(struct sched_ends *e)
{
    free(e->v);
    *e = (struct sched_ends){0};
}
