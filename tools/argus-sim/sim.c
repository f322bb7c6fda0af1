#include "tools/argus-sim/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/name_id.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "tools/argus-sim/scenario.h"

/* One sealed batch waiting for its ack. */
struct sim_pending {
    uint64_t seq;
    uint64_t due_ns; /* not sent before this time (rate pacing) */
    uint32_t nsteps;
    uint64_t sent_ns; /* 0 = not sent on this stream */
    void *frame;
    size_t len;
};

struct sim_agent {
    uint32_t index;
    char id[64], node[64];
    uint32_t first_rank, nranks;
    uint64_t epoch, next_seq, next_step, due_ns;
    struct sim_pending *q; /* ring of max_inflight */
    size_t qhead, qlen, qsent;
    bool names_acked, resources_acked;
    uint64_t dict_seq; /* first seq that carried names; 0 = none yet */
    struct rpc_stream *st;
    uint64_t reconnect_ns, backoff_ns;
};

struct sim_thread {
    const struct sim_config *c;
    struct rpc_channel *ch;
    struct rpc_queue *q;
    struct sim_agent *agents;
    size_t nagents;
    struct sim_result r;
    uint64_t *latencies;
    size_t nlat, latcap;
    pthread_t thread;
};

uint64_t sim_base_unix_ns(const struct sim_config *c)
{
    return c->base_unix_ns;
}

static void sim_add_names(Argus__V1__Batch *b, Argus__V1__NameEntry *names,
                          Argus__V1__NameEntry **ptrs, const char *job)
{
    for (unsigned i = 0; i < GEN_NAMES; i++) {
        argus__v1__name_entry__init(&names[i]);
        names[i].job = (char *)job;
        names[i].name = (char *)gen_name(i);
        names[i].id = name_id(gen_name(i));
        ptrs[i] = &names[i];
    }
    b->n_names = GEN_NAMES;
    b->names = ptrs;
}

/* Seal the next batch of agent a: steps_per_batch steps of its ranks. */
static int sim_seal(struct sim_thread *t, struct sim_agent *a)
{
    const struct sim_config *c = t->c;
    uint64_t nsteps =
        c->steps - a->next_step < c->steps_per_batch ? c->steps - a->next_step : c->steps_per_batch;
    size_t n = (size_t)(nsteps * a->nranks);
    struct gen_step *g = malloc(n * sizeof(*g));
    Argus__V1__StepRecord **recs = malloc(n * sizeof(*recs));
    Argus__V1__Resource res[64], *resp[64];
    Argus__V1__NameEntry names[GEN_NAMES], *namep[GEN_NAMES];
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    struct gen_layout layout = {(uint32_t)c->ranks, (uint32_t)c->ranks_per_node, (uint32_t)c->tp,
                                (uint32_t)c->pp};
    int r = -ENOMEM;

    if (!g || !recs)
        goto out;
    for (uint64_t s = 0; s < nsteps; s++)
        for (uint32_t k = 0; k < a->nranks; k++) {
            struct gen_step *x = &g[s * a->nranks + k];
            gen_step(x, c->seed, c->job, a->first_rank + k, a->next_step + s, sim_base_unix_ns(c),
                     c->step_ns);
            recs[s * a->nranks + k] = &x->rec;
        }
    b.agent_id = a->id;
    b.epoch = a->epoch;
    b.seq = a->next_seq;
    b.n_steps = n;
    b.steps = recs;
    b.created_unix_ns = clock_real_ns();
    if (!a->names_acked) {
        sim_add_names(&b, names, namep, c->job);
        if (!a->dict_seq)
            a->dict_seq = b.seq;
    }
    if (!a->resources_acked) {
        for (uint32_t k = 0; k < a->nranks && k < 64; k++) {
            gen_resource(&res[k], &layout, c->job, a->first_rank + k, a->node);
            resp[k] = &res[k];
        }
        b.n_resources = a->nranks < 64 ? a->nranks : 64;
        b.resources = resp;
    }
    size_t len = argus__v1__batch__get_packed_size(&b);
    uint8_t *raw = malloc(len);
    if (!raw)
        goto out;
    argus__v1__batch__pack(&b, raw);
    struct sim_pending *p = &a->q[(a->qhead + a->qlen) % c->max_inflight];
    r = frame_encode(raw, len, FRAME_CODEC_LZ4, &p->frame, &p->len);
    free(raw);
    if (r < 0)
        goto out;
    p->seq = a->next_seq++;
    p->due_ns = a->due_ns;
    p->nsteps = (uint32_t)n;
    p->sent_ns = 0;
    a->qlen++;
    a->next_step += nsteps;
out:
    free(g);
    free(recs);
    return r;
}

static void sim_latency(struct sim_thread *t, uint64_t ns)
{
    if (t->nlat == t->latcap) {
        size_t cap = t->latcap ? t->latcap * 2 : 4096;
        uint64_t *l = realloc(t->latencies, cap * sizeof(*l));
        if (!l)
            return;
        t->latencies = l;
        t->latcap = cap;
    }
    t->latencies[t->nlat++] = ns;
}

static void sim_on_ack(struct sim_thread *t, struct sim_agent *a, const void *data, size_t len)
{
    Argus__V1__Ack *ack = argus__v1__ack__unpack(NULL, len, data);
    uint64_t now = clock_mono_ns();

    if (!ack)
        return;
    while (a->qlen && ack->epoch == a->epoch && a->q[a->qhead].seq <= ack->seq) {
        struct sim_pending *p = &a->q[a->qhead];
        if (p->sent_ns)
            sim_latency(t, now - p->sent_ns);
        t->r.batches_acked++;
        t->r.rank_steps_acked += p->nsteps;
        free(p->frame);
        p->frame = NULL;
        a->qhead = (a->qhead + 1) % t->c->max_inflight;
        a->qlen--;
        if (a->qsent)
            a->qsent--;
    }
    if (a->dict_seq && ack->seq >= a->dict_seq)
        a->names_acked = a->resources_acked = true;
    a->backoff_ns = 0;
    argus__v1__ack__free_unpacked(ack, NULL);
}

static void sim_on_closed(struct sim_thread *t, struct sim_agent *a, int status, const char *msg)
{
    uint64_t now = clock_mono_ns();

    if (status != RPC_OK && status != RPC_UNAVAILABLE && status != RPC_CANCELLED)
        t->r.rejects++;
    snprintf(t->r.last_error, sizeof(t->r.last_error), "agent %s: status %d: %s", a->id, status,
             msg);
    rpc_stream_free(a->st);
    a->st = NULL;
    a->backoff_ns = a->backoff_ns ? a->backoff_ns * 2 : 100 * NSEC_PER_MSEC;
    if (a->backoff_ns > 2 * NSEC_PER_SEC)
        a->backoff_ns = 2 * NSEC_PER_SEC;
    a->reconnect_ns = now + a->backoff_ns / 2 + (uint64_t)rand() % (a->backoff_ns / 2 + 1);
    if (a->qsent)
        t->r.resent += a->qsent;
    a->qsent = 0;
}

/* Generate what is due, (re)connect, and start a send when the slot is free. */
static void sim_service(struct sim_thread *t, struct sim_agent *a, uint64_t now)
{
    const struct sim_config *c = t->c;

    while (a->next_step < c->steps && a->qlen < c->max_inflight && now >= a->due_ns) {
        if (sim_seal(t, a) < 0)
            break;
        if (c->rate > 0)
            a->due_ns += (uint64_t)(c->steps_per_batch * 1e9 / c->rate);
    }
    if (!a->st && a->qlen && now >= a->reconnect_ns) {
        a->st = rpc_stream_open_on(t->ch, RPC_INGEST_PUSH, true, t->q, a);
        if (a->st && a->reconnect_ns)
            t->r.reconnects++;
    }
    if (a->st && a->qsent < a->qlen && rpc_stream_can_send(a->st)) {
        struct sim_pending *p = &a->q[(a->qhead + a->qsent) % c->max_inflight];
        if (now >= p->due_ns && rpc_stream_send(a->st, p->frame, p->len) == 0) {
            p->sent_ns = now;
            a->qsent++;
            t->r.batches_sent++;
        }
    }
}

static bool sim_done(const struct sim_thread *t)
{
    for (size_t i = 0; i < t->nagents; i++)
        if (t->agents[i].next_step < t->c->steps || t->agents[i].qlen)
            return false;
    return true;
}

static void *sim_thread_main(void *arg)
{
    struct sim_thread *t = arg;
    uint64_t start = clock_mono_ns(), deadline = start + t->c->timeout;

    while (!sim_done(t) && clock_mono_ns() < deadline) {
        uint64_t now = clock_mono_ns();
        for (size_t i = 0; i < t->nagents; i++)
            sim_service(t, &t->agents[i], now);
        struct rpc_stream_event ev;
        void *user;
        for (int n = 0; n < 4096 && rpc_queue_poll(t->q, n ? 0 : 5, &user, &ev) == 1; n++) {
            struct sim_agent *a = user;
            if (ev.kind == RPC_STREAM_MESSAGE)
                sim_on_ack(t, a, ev.data, ev.len);
            else if (ev.kind == RPC_STREAM_CLOSED)
                sim_on_closed(t, a, ev.status, ev.message);
            else if (ev.kind == RPC_STREAM_SENT)
                sim_service(t, a, clock_mono_ns());
        }
    }
    t->r.complete = sim_done(t);
    for (size_t i = 0; i < t->nagents; i++) {
        struct sim_agent *a = &t->agents[i];
        if (a->st) {
            rpc_stream_close_send(a->st);
            rpc_stream_free(a->st);
        }
        for (size_t k = 0; k < a->qlen; k++)
            free(a->q[(a->qhead + k) % t->c->max_inflight].frame);
        free(a->q);
    }
    struct rpc_stream_event ev;
    void *user;
    while (rpc_queue_live(t->q))
        rpc_queue_poll(t->q, 100, &user, &ev);
    return NULL;
}

static int sim_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void sim_setup_agents(const struct sim_config *c, struct sim_thread *th, size_t nthreads,
                             struct sim_agent *agents, size_t nagents)
{
    uint64_t epoch = clock_real_ns(), now = clock_mono_ns();

    for (size_t i = 0; i < nagents; i++) {
        struct sim_agent *a = &agents[i];
        a->index = (uint32_t)i;
        snprintf(a->id, sizeof(a->id), "%s%05zu", c->agent_prefix, i);
        snprintf(a->node, sizeof(a->node), "node%05zu", i);
        a->first_rank = (uint32_t)(i * c->ranks_per_node);
        a->nranks =
            (uint32_t)(c->ranks - a->first_rank < c->ranks_per_node ? c->ranks - a->first_rank
                                                                    : c->ranks_per_node);
        a->epoch = epoch;
        a->next_seq = 1;
        a->q = calloc(c->max_inflight, sizeof(*a->q));
        a->due_ns = c->rate > 0 ? now + (uint64_t)(1e9 / c->rate * (double)i / nagents) : now;
    }
    for (size_t k = 0; k < nthreads; k++) {
        th[k].c = c;
        th[k].agents = agents + k * nagents / nthreads;
        th[k].nagents = (k + 1) * nagents / nthreads - k * nagents / nthreads;
    }
}

/* Seal every batch of every agent up front (--pregen), paced from now. */
static int sim_pregen(struct sim_thread *t)
{
    for (size_t i = 0; i < t->nagents; i++) {
        struct sim_agent *a = &t->agents[i];
        uint64_t first = a->due_ns;
        while (a->next_step < t->c->steps) {
            if (sim_seal(t, a) < 0)
                return -ENOMEM;
            if (t->c->rate > 0)
                a->due_ns += (uint64_t)(t->c->steps_per_batch * 1e9 / t->c->rate);
        }
        a->due_ns = first;
    }
    return 0;
}

static void sim_shift_due(struct sim_thread *t, uint64_t delta)
{
    for (size_t i = 0; i < t->nagents; i++)
        for (size_t k = 0; k < t->agents[i].qlen; k++)
            t->agents[i].q[(t->agents[i].qhead + k) % t->c->max_inflight].due_ns += delta;
}

/* --scenario: the scenario generator seals batches straight into the agents'
 * queues, paced like generated ones. */
struct sim_scn_ctx {
    const struct sim_config *c;
    struct sim_agent *agents;
};

static uint64_t sim_scn_seq(void *ctx, uint32_t i)
{
    return ((struct sim_scn_ctx *)ctx)->agents[i].next_seq++;
}

static uint64_t sim_scn_epoch(void *ctx, uint32_t i)
{
    return ((struct sim_scn_ctx *)ctx)->agents[i].epoch;
}

static int sim_scn_push(void *ctx, uint32_t i, uint64_t seq, void *frame, size_t len,
                        uint32_t nsteps)
{
    const struct sim_config *c = ((struct sim_scn_ctx *)ctx)->c;
    struct sim_agent *a = &((struct sim_scn_ctx *)ctx)->agents[i];

    if (a->qlen >= c->max_inflight) {
        free(frame);
        return -ENOSPC;
    }
    struct sim_pending *p = &a->q[(a->qhead + a->qlen++) % c->max_inflight];
    *p = (struct sim_pending){
        .seq = seq, .due_ns = a->due_ns, .nsteps = nsteps, .frame = frame, .len = len};
    if (c->rate > 0)
        a->due_ns += (uint64_t)(c->steps_per_batch * 1e9 / c->rate);
    a->next_step = c->steps;
    a->names_acked = a->resources_acked = true; /* the batcher carries them */
    return 0;
}

static int sim_scenario(const struct sim_config *c, struct sim_agent *agents,
                        struct sim_result *out)
{
    struct sim_scn_ctx ctx = {c, agents};
    struct scenario_sink sink = {sim_scn_seq, sim_scn_epoch, sim_scn_push, &ctx};
    struct scenario_truth t;
    int r;

    r = scenario_generate(c, &sink, &t);
    out->truth_cause = t.cause;
    out->culprits = t.culprits;
    out->nculprits = t.nculprits;
    return r;
}

int sim_run(const struct sim_config *c, struct sim_result *out)
{
    size_t nagents = (size_t)((c->ranks + c->ranks_per_node - 1) / c->ranks_per_node);
    size_t nthreads = c->threads < nagents ? c->threads : nagents;
    struct sim_agent *agents = calloc(nagents, sizeof(*agents));
    struct sim_thread *th = calloc(nthreads, sizeof(*th));
    struct rpc_channel *ch = rpc_channel_new(c->collector, NULL);
    uint64_t start = clock_mono_ns();

    memset(out, 0, sizeof(*out));
    out->truth_cause = "";
    if (!agents || !th || !ch)
        return -ENOMEM;
    sim_setup_agents(c, th, nthreads, agents, nagents);
    if (*c->scenario && sim_scenario(c, agents, out) < 0)
        return -EINVAL;
    if (c->pregen || *c->scenario) {
        for (size_t k = 0; k < nthreads && !*c->scenario; k++)
            if (sim_pregen(&th[k]) < 0)
                return -ENOMEM;
        uint64_t now = clock_mono_ns();
        for (size_t k = 0; k < nthreads; k++)
            sim_shift_due(&th[k], now - start);
        start = now;
    }
    out->start_unix_ns = clock_real_ns();
    for (size_t k = 0; k < nthreads; k++) {
        th[k].ch = ch;
        th[k].q = rpc_queue_new();
        pthread_create(&th[k].thread, NULL, sim_thread_main, &th[k]);
    }
    uint64_t *lat = NULL;
    size_t nlat = 0;
    out->complete = true;
    for (size_t k = 0; k < nthreads; k++) {
        pthread_join(th[k].thread, NULL);
        rpc_queue_free(th[k].q);
        out->batches_sent += th[k].r.batches_sent;
        out->batches_acked += th[k].r.batches_acked;
        out->rank_steps_acked += th[k].r.rank_steps_acked;
        out->resent += th[k].r.resent;
        out->reconnects += th[k].r.reconnects;
        out->rejects += th[k].r.rejects;
        out->complete &= th[k].r.complete;
        if (th[k].r.last_error[0])
            memcpy(out->last_error, th[k].r.last_error, sizeof(out->last_error));
        uint64_t *grown = realloc(lat, (nlat + th[k].nlat + 1) * sizeof(*lat));
        if (grown) {
            lat = grown;
            memcpy(lat + nlat, th[k].latencies, th[k].nlat * sizeof(*lat));
            nlat += th[k].nlat;
        }
        free(th[k].latencies);
    }
    out->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
    if (nlat) {
        qsort(lat, nlat, sizeof(*lat), sim_cmp_u64);
        out->ack_latency_p50_ms = (double)lat[nlat / 2] / 1e6;
        out->ack_latency_p99_ms = (double)lat[nlat * 99 / 100] / 1e6;
    }
    free(lat);
    free(agents);
    free(th);
    rpc_channel_free(ch);
    return out->complete ? 0 : -ETIMEDOUT;
}
