#include "agent/spans/spans.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/spans/spanring.h"
#include "common/name_id.h"

#define SPANS_MAX_RINGS 256 /* processes with a ring; more are not kept */
#define SPANS_RECENT 64     /* answered requests remembered (SPANS_REPEAT_NS) */

struct spans_answered {
    uint64_t key, at_ns; /* FNV-1a of report id, job and rank; when answered */
};

struct spans_ring {
    uint32_t pid, rank;
    char *job;        /* NULL until the rank is known */
    uint64_t gone_ns; /* when the rank exited (monotonic); 0 while it runs */
    struct spanring *ring;
};

struct spans {
    struct spans_options o;
    struct spans_ring *rings;
    size_t n, cap;
    size_t last; /* index of the ring of the previous event */
    uint64_t sealed_bytes;
    uint64_t captures, capture_spans;
    struct spanring_stats freed; /* the counters of rings freed since */
    struct spans_answered recent[SPANS_RECENT];
    size_t next_recent;
};

struct spans *spans_new(const struct spans_options *o)
{
    struct spans *s = calloc(1, sizeof(*s));

    if (s)
        s->o = *o;
    return s;
}

void spans_free(struct spans *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        spanring_free(s->rings[i].ring);
        free(s->rings[i].job);
    }
    free(s->rings);
    free(s);
}

/* Free ring i (its counters go on in s->freed). */
static void spans_free_ring(struct spans *s, size_t i)
{
    struct spanring_stats st;

    spanring_get_stats(s->rings[i].ring, &st);
    s->freed.spans += st.spans;
    s->freed.dropped_age += st.spans - st.dropped_cap; /* what it still held ages out with it */
    s->freed.dropped_cap += st.dropped_cap;
    s->freed.corrupt_chunks += st.corrupt_chunks;
    spanring_free(s->rings[i].ring);
    free(s->rings[i].job);
    s->rings[i] = s->rings[--s->n];
    s->last = s->n;
}

/* Room for one more ring: the one of the rank that exited first goes when
 * every slot is taken. */
static bool spans_room(struct spans *s)
{
    size_t victim = s->n;

    for (size_t i = 0; s->n >= SPANS_MAX_RINGS && i < s->n; i++)
        if (s->rings[i].gone_ns &&
            (victim == s->n || s->rings[i].gone_ns < s->rings[victim].gone_ns))
            victim = i;
    if (victim < s->n)
        spans_free_ring(s, victim);
    return s->n < SPANS_MAX_RINGS;
}

/* The ring of pid, created when new (and rings are allowed). NULL when none. */
static struct spans_ring *spans_ring(struct spans *s, uint32_t pid, bool create)
{
    struct spanring_options ro = {s->o.chunk_ns, s->o.keep_ns};

    if (s->last < s->n && s->rings[s->last].pid == pid)
        return &s->rings[s->last];
    for (size_t i = 0; i < s->n; i++)
        if (s->rings[i].pid == pid)
            return &s->rings[s->last = i];
    if (!create || !s->o.ring_bytes || !spans_room(s))
        return NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        struct spans_ring *grown = realloc(s->rings, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        s->rings = grown;
        s->cap = cap;
    }
    s->rings[s->n] = (struct spans_ring){.pid = pid, .ring = spanring_new(&ro)};
    if (!s->rings[s->n].ring)
        return NULL;
    return &s->rings[s->last = s->n++];
}

void spans_track(struct spans *s, uint32_t pid, const char *job, uint32_t rank)
{
    struct spans_ring *r = spans_ring(s, pid, true);
    char *copy;

    if (!r || !(copy = strdup(job)))
        return;
    free(r->job);
    r->job = copy;
    r->rank = rank;
    r->gone_ns = 0;
}

void spans_untrack(struct spans *s, uint32_t pid, uint64_t now_ns)
{
    struct spans_ring *r = spans_ring(s, pid, false);

    if (r)
        r->gone_ns = now_ns ? now_ns : 1;
}

/* The bytes of every ring, and the oldest chunk over the cap dropped. */
static void spans_enforce_cap(struct spans *s)
{
    for (;;) {
        uint64_t total = 0, oldest = UINT64_MAX;
        size_t victim = s->n;
        struct spanring_stats st;

        for (size_t i = 0; i < s->n; i++) {
            spanring_get_stats(s->rings[i].ring, &st);
            total += st.bytes;
            if (spanring_oldest_chunk_ns(s->rings[i].ring) < oldest) {
                oldest = spanring_oldest_chunk_ns(s->rings[i].ring);
                victim = i;
            }
        }
        s->sealed_bytes = total;
        if (total <= s->o.ring_bytes || victim == s->n)
            return;
        spanring_drop_oldest(s->rings[victim].ring);
    }
}

/* The span of ev; false for kinds that are not spans. */
static bool spans_from_event(const struct agent_event *ev, struct spanring_span *sp)
{
    *sp = (struct spanring_span){.start_ns = ev->ts_ns, .tid = ev->tid};
    switch (ev->kind) {
    case AGENT_EVENT_KERNEL:
        sp->kind = ARGUS__V1__SPAN_KIND__SPAN_KERNEL;
        sp->name_id = ev->kernel.name_id;
        sp->duration_ns = ev->kernel.duration_ns;
        sp->stream = ev->kernel.stream;
        sp->correlation = ev->kernel.correlation;
        sp->value = ev->kernel.shape;
        return true;
    case AGENT_EVENT_PHASE:
    case AGENT_EVENT_PHASE_BEGIN:
        sp->kind = ev->kind == AGENT_EVENT_PHASE ? ARGUS__V1__SPAN_KIND__SPAN_PHASE
                                                 : ARGUS__V1__SPAN_KIND__SPAN_PHASE_BEGIN;
        sp->name_id = ev->phase.name_id;
        sp->duration_ns = ev->kind == AGENT_EVENT_PHASE ? ev->phase.duration_ns : 0;
        sp->stream = ev->phase.stream;
        return true;
    case AGENT_EVENT_PHASE_END:
        sp->kind = ARGUS__V1__SPAN_KIND__SPAN_PHASE_END;
        return true;
    case AGENT_EVENT_COLLECTIVE: {
        uint64_t b = ev->collective.gpu_start_ns, e = ev->collective.gpu_end_ns;
        if (!b || e < b) {
            b = ev->ts_ns;
            e = ev->collective.host_return_ns > b ? ev->collective.host_return_ns : b;
        }
        sp->kind = ARGUS__V1__SPAN_KIND__SPAN_COLLECTIVE;
        sp->start_ns = b;
        sp->duration_ns = e - b;
        sp->name_id = ev->collective.name_id;
        sp->stream = ev->collective.stream;
        sp->value = ev->collective.bytes;
        return true;
    }
    case AGENT_EVENT_COUNTER:
        sp->kind = ARGUS__V1__SPAN_KIND__SPAN_COUNTER;
        sp->name_id = ev->counter.counter;
        sp->value = ev->counter.value;
        return true;
    case AGENT_EVENT_STEP:
        sp->kind = ARGUS__V1__SPAN_KIND__SPAN_STEP;
        sp->value = ev->step.number;
        return true;
    default:
        return false;
    }
}

void spans_event(struct spans *s, const struct agent_event *ev)
{
    struct spanring_span sp;
    struct spans_ring *r;
    struct spanring_stats before, after;

    if (!ev->pid || !spans_from_event(ev, &sp))
        return;
    r = spans_ring(s, ev->pid, false);
    if (!r)
        return; /* not a rank (or no ring for it): nothing to drill into */
    spanring_get_stats(r->ring, &before);
    spanring_add(r->ring, &sp);
    spanring_get_stats(r->ring, &after);
    if (after.chunks != before.chunks && after.bytes > before.bytes)
        spans_enforce_cap(s); /* a chunk was sealed: the cap is checked per chunk */
}

void spans_tick(struct spans *s, uint64_t now_ns)
{
    for (size_t i = 0; i < s->n; i++)
        spanring_tick(s->rings[i].ring, now_ns);
    for (size_t i = s->n; i-- > 0;) /* an exited rank's ring lives as long as its spans */
        if (s->rings[i].gone_ns && s->rings[i].gone_ns + s->o.keep_ns < now_ns)
            spans_free_ring(s, i);
    spans_enforce_cap(s);
}

/* Collecting a window into a TraceWindow. */
struct spans_collect {
    Argus__V1__Span *spans, **ptrs;
    size_t n, max;
    uint64_t in_window;
    const struct clock_offset *clock;
};

static int spans_collect_one(void *ctx, const struct spanring_span *sp)
{
    struct spans_collect *c = ctx;
    Argus__V1__Span *o;

    c->in_window++;
    if (c->n >= c->max)
        return 0; /* keep counting */
    o = &c->spans[c->n];
    argus__v1__span__init(o);
    o->kind = (Argus__V1__SpanKind)sp->kind;
    o->name_id = sp->name_id;
    o->start_unix_ns = clock_offset_to_real(c->clock, sp->start_ns);
    o->duration_ns = sp->duration_ns;
    o->stream = sp->stream;
    o->tid = sp->tid;
    o->value = sp->value;
    o->correlation = sp->correlation;
    c->ptrs[c->n++] = o;
    return 0;
}

/* The ring of the rank: its running process's, else the one that exited last. */
static struct spans_ring *spans_find_rank(struct spans *s, const char *job, uint32_t rank)
{
    struct spans_ring *best = NULL;

    for (size_t i = 0; i < s->n; i++) {
        struct spans_ring *r = &s->rings[i];

        if (!r->job || r->rank != rank || strcmp(r->job, job) != 0)
            continue;
        if (!best || !r->gone_ns || (best->gone_ns && r->gone_ns > best->gone_ns))
            best = r;
        if (!r->gone_ns)
            break;
    }
    return best;
}

/* Fill w (its spans in c) from the ring of the request; errbuf gets why
 * spans are missing. 0 or -ENOMEM. */
static int spans_fill(struct spans *s, const Argus__V1__CaptureRequest *req,
                      struct spans_collect *c, char *errbuf, size_t errlen, uint64_t *oldest)
{
    struct spans_ring *r = spans_find_rank(s, req->job ? req->job : "", req->rank);
    struct spanring_stats st;
    int corrupt;

    if (!r) {
        snprintf(errbuf, errlen, "rank %u of job %s has no span ring on this agent", req->rank,
                 req->job);
        return 0;
    }
    spanring_seal(r->ring);
    spanring_get_stats(r->ring, &st);
    *oldest = st.oldest_ns ? clock_offset_to_real(s->o.clock, st.oldest_ns) : 0;
    corrupt =
        spanring_window(r->ring, clock_offset_to_mono(s->o.clock, req->from_unix_ns),
                        clock_offset_to_mono(s->o.clock, req->to_unix_ns), spans_collect_one, c);
    if (corrupt < 0)
        return corrupt;
    if (corrupt)
        snprintf(errbuf, errlen, "%d corrupt span chunks refused", corrupt);
    else if (!c->in_window && (!*oldest || *oldest > req->to_unix_ns))
        snprintf(errbuf, errlen, "the window aged out of the span ring (spans.keep)");
    return 0;
}

/* True when the request was answered within SPANS_REPEAT_NS; else it is
 * remembered as answered now. */
static bool spans_repeated(struct spans *s, const Argus__V1__CaptureRequest *req, uint64_t now)
{
    uint64_t h = name_id_update(NAME_ID_BASIS, req->report_id, strlen(req->report_id) + 1);

    h = name_id_update(h, req->job, strlen(req->job) + 1);
    h = name_id_update(h, &req->rank, sizeof(req->rank));
    for (size_t i = 0; i < SPANS_RECENT; i++)
        if (s->recent[i].key == h && s->recent[i].at_ns &&
            now - s->recent[i].at_ns < SPANS_REPEAT_NS)
            return true;
    s->recent[s->next_recent++ % SPANS_RECENT] = (struct spans_answered){h, now};
    return false;
}

int spans_capture(struct spans *s, const Argus__V1__CaptureRequest *req, uint64_t now_ns,
                  uint8_t **out, size_t *len)
{
    Argus__V1__TraceWindow w = ARGUS__V1__TRACE_WINDOW__INIT;
    struct spans_collect c = {.max = s->o.capture_max, .clock = s->o.clock};
    char errbuf[256] = "";
    int r = -ENOMEM;

    if (spans_repeated(s, req, now_ns ? now_ns : 1))
        return -EALREADY;
    c.spans = calloc(c.max ? c.max : 1, sizeof(*c.spans));
    c.ptrs = calloc(c.max ? c.max : 1, sizeof(*c.ptrs));
    if (!c.spans || !c.ptrs)
        goto out;
    r = spans_fill(s, req, &c, errbuf, sizeof(errbuf), &w.ring_oldest_unix_ns);
    if (r < 0)
        goto out;
    w.report_id = req->report_id;
    w.job = req->job;
    w.rank = req->rank;
    w.from_unix_ns = req->from_unix_ns;
    w.to_unix_ns = req->to_unix_ns;
    w.spans = c.ptrs;
    w.n_spans = c.n;
    w.spans_in_window = c.in_window;
    w.error = errbuf;
    *len = argus__v1__trace_window__get_packed_size(&w);
    *out = malloc(*len ? *len : 1);
    r = *out ? 0 : -ENOMEM;
    if (*out)
        argus__v1__trace_window__pack(&w, *out);
    s->captures++;
    s->capture_spans += c.n;
out:
    free(c.spans);
    free(c.ptrs);
    return r;
}

void spans_get_stats(const struct spans *s, struct spans_stats *out)
{
    struct spanring_stats st;

    *out = (struct spans_stats){.rings = s->n,
                                .spans = s->freed.spans,
                                .dropped_age = s->freed.dropped_age,
                                .dropped_cap = s->freed.dropped_cap,
                                .corrupt_chunks = s->freed.corrupt_chunks,
                                .captures = s->captures,
                                .capture_spans = s->capture_spans};
    for (size_t i = 0; i < s->n; i++) {
        spanring_get_stats(s->rings[i].ring, &st);
        out->spans += st.spans;
        out->bytes += st.bytes;
        out->chunks += st.chunks;
        out->dropped_age += st.dropped_age;
        out->dropped_cap += st.dropped_cap;
        out->corrupt_chunks += st.corrupt_chunks;
    }
}
