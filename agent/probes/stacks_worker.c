/* The symbolizer thread of the stacks probe (see stacks_worker.h). */
#include "agent/probes/stacks_worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define WORKER_BATCH 64                      /* samples named between two publications */
#define NAME_SLOTS (2 * STACKS_WORKER_NAMES) /* power of two: hash of names */

struct worker_slot {
    struct stacks_raw raw;
    struct probe_stacks_sample out;
};

struct worker_forget {
    uint32_t pid;
    uint64_t after; /* due once done >= after */
};

struct stacks_worker {
    size_t cap;
    struct worker_slot *slots;
    int efd;
    pthread_t thread;
    bool started;

    pthread_mutex_t lock; /* guards what follows, up to the main thread's state */
    pthread_cond_t wake;
    atomic_bool stop;
    uint64_t pushed;  /* written by the main thread under the lock */
    uint64_t kick_to; /* pushed at the last kick, under the lock: the worker
                       * resolves up to it, so a spurious wakeup does nothing */
    uint64_t done;    /* written by the worker under the lock */
    struct worker_forget *forgets;
    size_t nforgets;
    uint32_t published; /* names written so far */
    struct stacks_worker_stats shared;

    /* main thread only */
    uint64_t taken;
    uint64_t kicked; /* pushed at the last kick */
    uint32_t main_names;
    uint64_t dropped;

    /* worker only (and the names it publishes, read-only once published) */
    struct symcache *cache;
    char **names;
    uint32_t nnames;
    uint32_t *name_slots; /* id + 1, 0 = empty */
    uint64_t resolved, names_full;
};

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* Intern name; returns its id, or 0 ("[other]") when the table is full. */
static uint32_t worker_intern(struct stacks_worker *w, const char *name)
{
    uint32_t h = name_hash(name);

    for (uint32_t i = 0; i < NAME_SLOTS; i++) {
        uint32_t *slot = &w->name_slots[(h + i) & (NAME_SLOTS - 1)];
        char *copy;

        if (*slot && !strcmp(w->names[*slot - 1], name))
            return *slot - 1;
        if (*slot)
            continue;
        if (w->nnames >= STACKS_WORKER_NAMES || !(copy = strdup(name))) {
            w->names_full++;
            return 0;
        }
        w->names[w->nnames] = copy;
        *slot = ++w->nnames;
        return w->nnames - 1;
    }
    return 0;
}

/* Name every frame of slot s (blocking file I/O on a cold cache). Frames
 * past the leaf hold return addresses: one byte back is inside the call. */
static void worker_resolve(struct stacks_worker *w, struct worker_slot *s)
{
    const struct stacks_raw *r = &s->raw;
    struct probe_stacks_sample *out = &s->out;
    uint32_t n = (uint32_t)r->nkernel + r->nuser;
    char name[256];

    memset(out, 0, sizeof(*out));
    out->ts_ns = r->ts_ns;
    out->pid = r->pid;
    for (uint32_t i = 0; i < n && i < PROBE_STACKS_FRAMES; i++) {
        bool leaf = i == 0 || i == r->nkernel;
        uint64_t ip = r->ips[i] - (leaf ? 0 : 1);

        if (i < r->nkernel)
            symcache_kernel(w->cache, ip, name, sizeof(name));
        else
            symcache_user(w->cache, r->pid, NULL, ip, name, sizeof(name));
        out->frames[out->nframes++] = worker_intern(w, name);
    }
    w->resolved++;
}

/* Under the lock: forgets that are due, moved into out (up to max). */
static size_t worker_due_forgets(struct stacks_worker *w, uint32_t *out, size_t max)
{
    size_t n = 0;

    while (n < w->nforgets && n < max && w->forgets[n].after <= w->done) {
        out[n] = w->forgets[n].pid;
        n++;
    }
    if (n) {
        memmove(w->forgets, w->forgets + n, (w->nforgets - n) * sizeof(*w->forgets));
        w->nforgets -= n;
    }
    return n;
}

static bool worker_idle(const struct stacks_worker *w)
{
    return w->done >= w->kick_to && (!w->nforgets || w->forgets[0].after > w->done);
}

/* Under the lock: make [start, end) visible, with the names they use. */
static void worker_publish(struct stacks_worker *w, uint64_t end)
{
    w->done = end;
    w->published = w->nnames;
    w->shared.resolved = w->resolved;
    w->shared.names_full = w->names_full;
    symcache_get_stats(w->cache, &w->shared.cache);
}

static void *worker_main(void *arg)
{
    struct stacks_worker *w = arg;
    uint32_t forget[16];
    const uint64_t one = 1;

    pthread_mutex_lock(&w->lock);
    while (!atomic_load(&w->stop)) {
        if (worker_idle(w)) {
            pthread_cond_wait(&w->wake, &w->lock);
            continue;
        }
        size_t nforget = worker_due_forgets(w, forget, 16);
        uint64_t seq = w->done, end = w->kick_to > w->done ? w->kick_to : w->done;

        if (end - seq > WORKER_BATCH)
            end = seq + WORKER_BATCH;
        pthread_mutex_unlock(&w->lock);
        for (size_t i = 0; i < nforget; i++)
            symcache_forget(w->cache, forget[i]);
        for (; seq < end && !atomic_load(&w->stop); seq++)
            worker_resolve(w, &w->slots[seq % w->cap]);
        pthread_mutex_lock(&w->lock);
        worker_publish(w, seq);
        if (write(w->efd, &one, sizeof(one)) < 0) {
            /* only EAGAIN at a counter near 2^64: still readable */
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct stacks_worker *stacks_worker_new(const struct stacks_worker_options *o)
{
    struct stacks_worker *w = calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    w->cap = o && o->queue ? o->queue : STACKS_WORKER_DEFAULT_QUEUE;
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->slots = calloc(w->cap, sizeof(*w->slots));
    w->names = calloc(STACKS_WORKER_NAMES, sizeof(*w->names));
    w->name_slots = calloc(NAME_SLOTS, sizeof(*w->name_slots));
    w->cache = symcache_new(o ? &o->cache : NULL);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    atomic_init(&w->stop, false);
    if (w->efd < 0 || !w->slots || !w->names || !w->name_slots || !w->cache) {
        stacks_worker_free(w);
        return NULL;
    }
    worker_intern(w, "[other]"); /* id 0 */
    w->published = w->main_names = w->nnames;
    return w;
}

int stacks_worker_start(struct stacks_worker *w)
{
    int err = pthread_create(&w->thread, NULL, worker_main, w);

    if (err)
        return -err;
    w->started = true;
    return 0;
}

void stacks_worker_free(struct stacks_worker *w)
{
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->lock);
        atomic_store(&w->stop, true);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    for (uint32_t i = 0; w->names && i < w->nnames; i++)
        free(w->names[i]);
    free(w->names);
    free(w->name_slots);
    free(w->slots);
    free(w->forgets);
    symcache_free(w->cache);
    if (w->efd >= 0)
        close(w->efd);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int stacks_worker_push(struct stacks_worker *w, const struct stacks_raw *s)
{
    uint64_t seq = w->pushed; /* only this thread writes it */

    if (seq - w->taken >= w->cap) {
        w->dropped++;
        return -ENOBUFS;
    }
    w->slots[seq % w->cap].raw = *s; /* outside [taken, pushed): the main thread's */
    pthread_mutex_lock(&w->lock);
    w->pushed = seq + 1;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

void stacks_worker_kick(struct stacks_worker *w)
{
    if (w->kicked == w->pushed) /* only this thread writes pushed */
        return;
    w->kicked = w->pushed;
    pthread_mutex_lock(&w->lock);
    w->kick_to = w->pushed;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

size_t stacks_worker_take(struct stacks_worker *w, struct probe_stacks_sample *out, size_t max)
{
    uint64_t done, counter;
    size_t n = 0;

    if (read(w->efd, &counter, sizeof(counter)) < 0) {
        /* EAGAIN: nothing signalled since the last take */
    }
    pthread_mutex_lock(&w->lock);
    done = w->done;
    w->main_names = w->published;
    pthread_mutex_unlock(&w->lock);
    for (; w->taken < done && n < max; n++, w->taken++)
        out[n] = w->slots[w->taken % w->cap].out;
    if (w->taken < done) { /* more than max: stay readable */
        const uint64_t one = 1;
        if (write(w->efd, &one, sizeof(one)) < 0) {
            /* EAGAIN: still readable */
        }
    }
    return n;
}

size_t stacks_worker_outstanding(const struct stacks_worker *w)
{
    return (size_t)(w->pushed - w->taken); /* both written by this thread only */
}

int stacks_worker_forget(struct stacks_worker *w, uint32_t pid)
{
    struct worker_forget *tmp;
    int err = 0;

    pthread_mutex_lock(&w->lock);
    tmp = realloc(w->forgets, (w->nforgets + 1) * sizeof(*tmp));
    if (tmp) {
        w->forgets = tmp;
        w->forgets[w->nforgets++] = (struct worker_forget){pid, w->pushed};
        pthread_cond_signal(&w->wake);
    } else {
        err = -ENOMEM;
    }
    pthread_mutex_unlock(&w->lock);
    return err;
}

const char *stacks_worker_name(const struct stacks_worker *w, uint32_t id)
{
    return id < w->main_names ? w->names[id] : w->names[0];
}

uint32_t stacks_worker_nnames(const struct stacks_worker *w)
{
    return w->main_names;
}

int stacks_worker_fd(const struct stacks_worker *w)
{
    return w->efd;
}

void stacks_worker_get_stats(struct stacks_worker *w, struct stacks_worker_stats *out)
{
    pthread_mutex_lock(&w->lock);
    *out = w->shared;
    out->pushed = w->pushed;
    pthread_mutex_unlock(&w->lock);
    out->dropped = w->dropped;
}
