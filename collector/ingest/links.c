#include "collector/ingest/links.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LINKS_BUCKETS 1024

struct links_agent {
    struct links_agent *next;
    uint32_t streams; /* open streams that carried a batch of it */
    uint64_t up_ns;   /* when the first of them came up */
    uint64_t down_ns; /* when the last one ended (0: never) */
    char agent[];
};

struct links {
    pthread_mutex_t lock;
    size_t down; /* agents with no stream, seen before */
    struct links_agent *buckets[LINKS_BUCKETS];
};

struct links *links_new(void)
{
    struct links *l = calloc(1, sizeof(*l));

    if (l)
        pthread_mutex_init(&l->lock, NULL);
    return l;
}

void links_free(struct links *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < LINKS_BUCKETS; i++) {
        while (l->buckets[i]) {
            struct links_agent *a = l->buckets[i];
            l->buckets[i] = a->next;
            free(a);
        }
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* agent's entry (the lock held), added when add and new; NULL otherwise. */
static struct links_agent *links_find(struct links *l, const char *agent, bool add)
{
    size_t h = 5381, n = strlen(agent);
    struct links_agent *a;

    for (size_t i = 0; i < n; i++)
        h = h * 33 + (unsigned char)agent[i];
    h %= LINKS_BUCKETS;
    for (a = l->buckets[h]; a; a = a->next)
        if (strcmp(a->agent, agent) == 0)
            return a;
    if (!add || !(a = calloc(1, sizeof(*a) + n + 1)))
        return NULL;
    memcpy(a->agent, agent, n + 1);
    a->next = l->buckets[h];
    l->buckets[h] = a;
    return a;
}

int links_up(struct links *l, const char *agent, uint64_t now_ns)
{
    struct links_agent *a;

    pthread_mutex_lock(&l->lock);
    a = links_find(l, agent, true);
    if (a && a->streams++ == 0) {
        a->up_ns = now_ns;
        if (a->down_ns)
            l->down--;
    }
    pthread_mutex_unlock(&l->lock);
    return a ? 0 : -ENOMEM;
}

void links_down(struct links *l, const char *agent, uint64_t now_ns)
{
    struct links_agent *a;

    pthread_mutex_lock(&l->lock);
    a = links_find(l, agent, false);
    if (a && a->streams && --a->streams == 0) {
        a->down_ns = now_ns ? now_ns : 1;
        l->down++;
    }
    pthread_mutex_unlock(&l->lock);
}

bool links_is_up(void *ctx, const char *agent, uint64_t *since_ns)
{
    struct links *l = ctx;
    struct links_agent *a;
    bool up = true;

    *since_ns = 0;
    pthread_mutex_lock(&l->lock);
    a = links_find(l, agent, false);
    if (a && a->streams)
        *since_ns = a->up_ns;
    else if (a)
        up = false;
    pthread_mutex_unlock(&l->lock);
    return up;
}

size_t links_unreachable(struct links *l)
{
    size_t n;

    pthread_mutex_lock(&l->lock);
    n = l->down;
    pthread_mutex_unlock(&l->lock);
    return n;
}
