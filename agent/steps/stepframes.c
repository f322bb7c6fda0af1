/* Step records waiting for their stack samples (see stepframes.h). */
#include "agent/steps/stepframes.h"

#include <errno.h>
#include <stdlib.h>

#include "common/name_id.h"

struct stepframes_waiting {
    uint32_t pid;
    uint64_t from_ns, to_ns; /* monotonic */
    uint64_t deadline_ns;
    Argus__V1__StepRecord *copy; /* unpacked: free with free_unpacked */
};

struct stepframes {
    struct stepframes_options o;
    struct stepframes_source src;
    bool have_src;
    struct stepframes_waiting *waiting; /* arrival order */
    size_t nwaiting;
    struct stepframes_stats st;
};

struct stepframes *stepframes_new(const struct stepframes_options *o)
{
    struct stepframes *sf = calloc(1, sizeof(*sf));

    if (!sf)
        return NULL;
    sf->o = *o;
    if (!sf->o.wait_ns)
        sf->o.wait_ns = STEPFRAMES_DEFAULT_WAIT_NS;
    if (!sf->o.max_waiting)
        sf->o.max_waiting = STEPFRAMES_DEFAULT_MAX_WAITING;
    sf->waiting = calloc(sf->o.max_waiting, sizeof(*sf->waiting));
    if (!sf->waiting) {
        free(sf);
        return NULL;
    }
    return sf;
}

void stepframes_free(struct stepframes *sf)
{
    if (!sf)
        return;
    for (size_t i = 0; i < sf->nwaiting; i++)
        argus__v1__step_record__free_unpacked(sf->waiting[i].copy, NULL);
    free(sf->waiting);
    free(sf);
}

void stepframes_set_source(struct stepframes *sf, const struct stepframes_source *src)
{
    stepframes_flush(sf); /* what waits on the old source */
    sf->have_src = src != NULL;
    if (src)
        sf->src = *src;
}

/* Attach pid's top frames in [from_ns, to_ns) to a shallow copy of s and
 * emit it. */
static void stepframes_emit(struct stepframes *sf, uint32_t pid, const Argus__V1__StepRecord *s,
                            uint64_t from_ns, uint64_t to_ns)
{
    struct probe_stacks_frame frames[STEPFRAMES_TOP];
    Argus__V1__StackFrame pf[STEPFRAMES_TOP], *pfp[STEPFRAMES_TOP];
    Argus__V1__StepRecord out = *s;
    size_t n = 0;

    if (sf->have_src && s->duration_ns)
        n = sf->src.top_frames(sf->src.state, pid, from_ns, to_ns, frames, STEPFRAMES_TOP);
    for (size_t i = 0; i < n; i++) {
        argus__v1__stack_frame__init(&pf[i]);
        pf[i].name_id = name_id(frames[i].name);
        pf[i].self = (uint32_t)frames[i].self;
        pf[i].total = (uint32_t)frames[i].total;
        names_define(sf->o.names, pf[i].name_id, frames[i].name);
        pfp[i] = &pf[i];
    }
    out.n_top_frames = n;
    out.top_frames = n ? pfp : NULL;
    sf->o.emit(sf->o.ctx, &out);
}

/* A deep copy of s (pack, unpack), or NULL. */
static Argus__V1__StepRecord *stepframes_copy(const Argus__V1__StepRecord *s)
{
    size_t len = argus__v1__step_record__get_packed_size(s);
    uint8_t *buf = malloc(len ? len : 1);
    Argus__V1__StepRecord *copy = NULL;

    if (buf) {
        argus__v1__step_record__pack(s, buf);
        copy = argus__v1__step_record__unpack(NULL, len, buf);
    }
    free(buf);
    return copy;
}

static void stepframes_release(struct stepframes *sf, struct stepframes_waiting *w, bool settled)
{
    if (!settled)
        sf->st.expired++;
    stepframes_emit(sf, w->pid, w->copy, w->from_ns, w->to_ns);
    argus__v1__step_record__free_unpacked(w->copy, NULL);
    w->copy = NULL;
}

int stepframes_add(struct stepframes *sf, uint32_t pid, const Argus__V1__StepRecord *s,
                   uint64_t now_ns)
{
    uint64_t from = clock_offset_to_mono(sf->o.clock, s->start_unix_ns);
    struct stepframes_waiting w = {pid, from, from + s->duration_ns, now_ns + sf->o.wait_ns, NULL};

    if (!sf->have_src || !s->duration_ns ||
        (!sf->nwaiting && sf->src.settled(sf->src.state, w.to_ns))) {
        stepframes_emit(sf, pid, s, w.from_ns, w.to_ns);
        return 0;
    }
    w.copy = stepframes_copy(s);
    if (!w.copy) {
        stepframes_emit(sf, pid, s, w.from_ns, w.to_ns);
        return -ENOMEM;
    }
    if (sf->nwaiting == sf->o.max_waiting) { /* send the oldest on now */
        sf->st.overflowed++;
        stepframes_release(sf, &sf->waiting[0], false);
        sf->nwaiting--;
        for (size_t i = 0; i < sf->nwaiting; i++)
            sf->waiting[i] = sf->waiting[i + 1];
    }
    sf->waiting[sf->nwaiting++] = w;
    sf->st.waited++;
    stepframes_tick(sf, now_ns);
    return 0;
}

void stepframes_tick(struct stepframes *sf, uint64_t now_ns)
{
    size_t kept = 0;

    for (size_t i = 0; i < sf->nwaiting; i++) {
        struct stepframes_waiting *w = &sf->waiting[i];
        bool settled = sf->src.settled(sf->src.state, w->to_ns);

        if (settled || now_ns >= w->deadline_ns)
            stepframes_release(sf, w, settled);
        else
            sf->waiting[kept++] = *w;
    }
    sf->nwaiting = kept;
}

uint64_t stepframes_next_ns(const struct stepframes *sf)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < sf->nwaiting; i++)
        if (sf->waiting[i].deadline_ns < next)
            next = sf->waiting[i].deadline_ns;
    return next;
}

void stepframes_flush(struct stepframes *sf)
{
    for (size_t i = 0; i < sf->nwaiting; i++)
        stepframes_release(sf, &sf->waiting[i],
                           sf->src.settled(sf->src.state, sf->waiting[i].to_ns));
    sf->nwaiting = 0;
}

void stepframes_get_stats(const struct stepframes *sf, struct stepframes_stats *out)
{
    *out = sf->st;
    out->waiting = sf->nwaiting;
}
