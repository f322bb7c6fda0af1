#include "tools/argus-sim/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/kernel_code.h"
#include "common/name_id.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "tools/argus-sim/delivery.h"
#include "tools/argus-sim/restamp.h"
#include "tools/argus-sim/scenario.h"
#include "tools/argus-sim/sim_plan.h"

/* One sealed batch waiting for its ack. */
struct sim_pending {
    uint64_t seq;
    uint64_t due_ns; /* not sent before this time (rate pacing) */
    uint32_t nsteps;
    uint64_t sent_ns;      /* 0 = not sent on this stream */
    uint64_t sent_real_ns; /* last send, UNIX ns (the send log) */
    uint32_t batch, sends; /* index in the delivery plan; sends so far */
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
    uint64_t base_ns;  /* mono time of the plan's 0 */
    size_t next_batch; /* plan index of the next batch to seal */
    int64_t offset_ns; /* the node's clock offset */
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
    const struct delivery_plan *plan;
    bool restamp;
    FILE *send_log; /* may be NULL; shared by the threads (stdio locks) */
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

struct sim_coded {
    struct kernel_code_prev prev;
    Argus__V1__StepRecord *rec;
    struct kernel_code_buf buf[];
};

/* The n records coded as an agent's batcher codes them (each against the
 * one before): recs[i] points at its coded copy, which lives in the
 * returned buffers. NULL on -ENOMEM. */
static struct sim_coded *sim_code(Argus__V1__StepRecord **recs, size_t n)
{
    struct sim_coded *c = calloc(1, sizeof(*c) + n * sizeof(c->buf[0]));

    if (!c)
        return NULL;
    c->rec = malloc((n ? n : 1) * sizeof(*c->rec));
    if (!c->rec)
        return free(c), NULL;
    for (size_t i = 0; i < n; i++) {
        kernel_code_compact(&c->buf[i], recs[i], &c->prev, &c->rec[i]);
        kernel_code_prev_set(&c->prev, recs[i]);
        recs[i] = &c->rec[i];
    }
    return c;
}

static void sim_code_free(struct sim_coded *c, size_t n)
{
    if (!c)
        return;
    for (size_t i = 0; i < n; i++)
        kernel_code_buf_free(&c->buf[i]);
    kernel_code_prev_free(&c->prev);
    free(c->rec);
    free(c);
}

/* Seal the next batch of agent a: steps_per_batch steps of its ranks. */
static int sim_seal(struct sim_thread *t, struct sim_agent *a)
{
    const struct sim_config *c = t->c;
    const struct delivery_batch *db = delivery_plan_batch(t->plan, a->index, a->next_batch);
    uint64_t nsteps = db ? db->nsteps : 0;
    size_t n = (size_t)(nsteps * a->nranks);
    struct gen_step *g = malloc(n * sizeof(*g));
    Argus__V1__StepRecord **recs = malloc(n * sizeof(*recs));
    Argus__V1__Resource res[64], *resp[64];
    Argus__V1__NameEntry names[GEN_NAMES], *namep[GEN_NAMES];
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    struct sim_coded *code = NULL;
    struct gen_layout layout = {(uint32_t)c->ranks, (uint32_t)c->ranks_per_node, (uint32_t)c->tp,
                                (uint32_t)c->pp};
    int r = -ENOMEM;

    if (!g || !recs || !db)
        goto out;
    for (uint64_t s = 0; s < nsteps; s++)
        for (uint32_t k = 0; k < a->nranks; k++) {
            struct gen_step *x = &g[s * a->nranks + k];
            gen_step(x, c->seed, c->job, a->first_rank + k, a->next_step + s, sim_base_unix_ns(c),
                     c->step_ns);
            restamp_record(&x->rec, a->offset_ns);
            recs[s * a->nranks + k] = &x->rec;
        }
    if (c->code_kernels && !(code = sim_code(recs, n)))
        goto out;
    b.agent_id = a->id;
    b.epoch = a->epoch;
    b.seq = a->next_seq;
    b.n_steps = n;
    b.steps = recs;
    b.created_unix_ns = (uint64_t)((int64_t)clock_real_ns() + a->offset_ns);
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
    *p = (struct sim_pending){.seq = a->next_seq++,
                              .due_ns = a->base_ns + db->send_ns,
                              .nsteps = (uint32_t)n,
                              .batch = (uint32_t)a->next_batch,
                              .frame = p->frame,
                              .len = p->len};
    a->qlen++;
    a->next_step += nsteps;
    db = delivery_plan_batch(t->plan, a->index, ++a->next_batch);
    a->due_ns = db ? a->base_ns + db->seal_ns : UINT64_MAX;
out:
    sim_code_free(code, n);
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

/* One line of the send log per acked batch: what it held, when it was
 * (last) sent and acked. */
static void sim_log_batch(struct sim_thread *t, const struct sim_agent *a,
                          const struct sim_pending *p)
{
    const struct delivery_batch *b = delivery_plan_batch(t->plan, a->index, p->batch);

    if (!t->send_log || !b)
        return;
    fprintf(t->send_log,
            "{\"agent\": %" PRIu32 ", \"node\": \"%s\", \"first_rank\": %" PRIu32
            ", \"nranks\": %" PRIu32 ", \"epoch\": %" PRIu64 ", \"seq\": %" PRIu64
            ", \"first_step\": %" PRIu64 ", \"nsteps\": %" PRIu32 ", \"records\": %" PRIu32
            ", \"planned_s\": %.3f, \"replay\": %s, \"sends\": %" PRIu32
            ", \"sent_unix_ns\": %" PRIu64 ", \"acked_unix_ns\": %" PRIu64 "}\n",
            a->index, a->node, a->first_rank, a->nranks, a->epoch, p->seq, b->first_step, b->nsteps,
            p->nsteps, (double)b->send_ns / 1e9, b->replay ? "true" : "false", p->sends,
            p->sent_real_ns, clock_real_ns());
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
        sim_log_batch(t, a, p);
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

/* An outage of a's stream until until_ns (mono): drop the connection (what
 * was sent and not acked is sent again after it) and stay away until then. */
static void sim_cut(struct sim_thread *t, struct sim_agent *a, uint64_t until_ns)
{
    if (a->st) {
        rpc_stream_free(a->st); /* its late events are consumed by the queue */
        a->st = NULL;
        t->r.resent += a->qsent;
        a->qsent = 0;
        if (t->c->outage_replay == SIM_REPLAY_NEW_EPOCH)
            a->epoch++;
    }
    a->backoff_ns = 0;
    if (a->reconnect_ns < until_ns)
        a->reconnect_ns = until_ns;
}

/* Start sending p, restamped with the stream's identity and the send time
 * when the plan says so. Returns rpc_stream_send's result. */
static int sim_send(struct sim_thread *t, struct sim_agent *a, struct sim_pending *p)
{
    void *frame = NULL;
    size_t len;
    int r;

    if (t->restamp &&
        restamp_frame(p->frame, p->len, a->epoch, p->seq,
                      (uint64_t)((int64_t)clock_real_ns() + a->offset_ns), &frame, &len) == 0)
        r = rpc_stream_send(a->st, frame, len);
    else
        r = rpc_stream_send(a->st, p->frame, p->len);
    free(frame);
    if (r == 0) {
        p->sent_real_ns = clock_real_ns();
        p->sends++;
    }
    return r;
}

/* Generate what is due, (re)connect, and start a send when the slot is free. */
static void sim_service(struct sim_thread *t, struct sim_agent *a, uint64_t now)
{
    const struct sim_config *c = t->c;
    uint64_t until;
    bool outage;

    while (a->next_step < c->steps && a->qlen < c->max_inflight && now >= a->due_ns)
        if (sim_seal(t, a) < 0)
            break;
    if (now >= a->base_ns &&
        delivery_plan_blocked(t->plan, a->index, now - a->base_ns, &until, &outage)) {
        if (outage)
            sim_cut(t, a, a->base_ns + until);
        return; /* stalled or cut: nothing goes out */
    }
    if (!a->st && a->qlen && now >= a->reconnect_ns) {
        a->st = rpc_stream_open_on(t->ch, RPC_INGEST_PUSH, true, t->q, a);
        if (a->st && a->reconnect_ns)
            t->r.reconnects++;
    }
    if (a->st && a->qsent < a->qlen && rpc_stream_can_send(a->st)) {
        struct sim_pending *p = &a->q[(a->qhead + a->qsent) % c->max_inflight];
        if (now >= p->due_ns && sim_send(t, a, p) == 0) {
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

static void sim_setup_agents(const struct sim_config *c, const struct delivery_plan *plan,
                             struct sim_thread *th, size_t nthreads, struct sim_agent *agents,
                             size_t nagents)
{
    uint64_t epoch = c->epoch ? c->epoch : clock_real_ns(), now = clock_mono_ns();

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
        a->base_ns = now;
        a->offset_ns = delivery_plan_clock_offset(plan, a->index);
        a->due_ns = now + delivery_plan_batch(plan, a->index, 0)->seal_ns;
    }
    for (size_t k = 0; k < nthreads; k++) {
        th[k].c = c;
        th[k].agents = agents + k * nagents / nthreads;
        th[k].nagents = (k + 1) * nagents / nthreads - k * nagents / nthreads;
        th[k].plan = plan;
    }
}

/* Seal every batch of every agent up front (--pregen), paced from now. */
static int sim_pregen(struct sim_thread *t)
{
    for (size_t i = 0; i < t->nagents; i++) {
        struct sim_agent *a = &t->agents[i];
        while (a->next_step < t->c->steps)
            if (sim_seal(t, a) < 0)
                return -ENOMEM;
    }
    return 0;
}

static void sim_shift_due(struct sim_thread *t, uint64_t delta)
{
    for (size_t i = 0; i < t->nagents; i++) {
        t->agents[i].base_ns += delta;
        for (size_t k = 0; k < t->agents[i].qlen; k++)
            t->agents[i].q[(t->agents[i].qhead + k) % t->c->max_inflight].due_ns += delta;
    }
}

/* --scenario: the scenario generator seals batches straight into the agents'
 * queues, paced like generated ones. */
struct sim_scn_ctx {
    const struct sim_config *c;
    struct sim_agent *agents;
    const struct delivery_plan *plan;
};

/* A batch ends with step when the plan says so; remember which. */
static bool sim_scn_seal_after(void *ctx, uint32_t i, uint64_t step)
{
    struct sim_scn_ctx *x = ctx;
    size_t k = delivery_plan_find(x->plan, i, step);
    const struct delivery_batch *b = delivery_plan_batch(x->plan, i, k);

    x->agents[i].next_batch = k;
    return b && step + 1 == b->first_step + b->nsteps;
}

static int64_t sim_scn_clock_offset(void *ctx, uint32_t i)
{
    return ((struct sim_scn_ctx *)ctx)->agents[i].offset_ns;
}

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
    const struct delivery_batch *b =
        delivery_plan_batch(((struct sim_scn_ctx *)ctx)->plan, i, a->next_batch);
    struct sim_pending *p = &a->q[(a->qhead + a->qlen++) % c->max_inflight];
    *p = (struct sim_pending){.seq = seq,
                              .due_ns = a->base_ns + (b ? b->send_ns : 0),
                              .nsteps = nsteps,
                              .batch = (uint32_t)a->next_batch,
                              .frame = frame,
                              .len = len};
    a->next_step = c->steps;
    a->names_acked = a->resources_acked = true; /* the batcher carries them */
    return 0;
}

/* A batch of statuses (liveness.h): no steps, due at the plan time. */
static int sim_scn_push_at(void *ctx, uint32_t i, uint64_t seq, void *frame, size_t len,
                           uint64_t due_ns)
{
    const struct sim_config *c = ((struct sim_scn_ctx *)ctx)->c;
    struct sim_agent *a = &((struct sim_scn_ctx *)ctx)->agents[i];

    if (a->qlen >= c->max_inflight) {
        free(frame);
        return -ENOSPC;
    }
    a->q[(a->qhead + a->qlen++) % c->max_inflight] = (struct sim_pending){
        .seq = seq, .due_ns = a->base_ns + due_ns, .batch = UINT32_MAX, .frame = frame, .len = len};
    a->next_step = c->steps;
    return 0;
}

static int sim_scenario(const struct sim_config *c, const struct delivery_plan *plan,
                        struct sim_agent *agents, struct sim_result *out)
{
    struct sim_scn_ctx ctx = {c, agents, plan};
    struct scenario_sink sink = {.next_seq = sim_scn_seq,
                                 .epoch = sim_scn_epoch,
                                 .push = sim_scn_push,
                                 .ctx = &ctx,
                                 .seal_after = sim_scn_seal_after,
                                 .clock_offset = sim_scn_clock_offset,
                                 .push_at = sim_scn_push_at};
    struct scenario_truth t;
    int r;

    r = scenario_generate(c, &sink, &t);
    out->truth_cause = t.cause;
    out->culprits = t.culprits;
    out->nculprits = t.nculprits;
    return r;
}

/* Fold thread k's results into out (latencies appended to *lat). */
static void sim_collect(struct sim_thread *t, struct sim_result *out, uint64_t **lat, size_t *nlat)
{
    out->batches_sent += t->r.batches_sent;
    out->batches_acked += t->r.batches_acked;
    out->rank_steps_acked += t->r.rank_steps_acked;
    out->resent += t->r.resent;
    out->reconnects += t->r.reconnects;
    out->rejects += t->r.rejects;
    out->complete &= t->r.complete;
    if (t->r.last_error[0])
        memcpy(out->last_error, t->r.last_error, sizeof(out->last_error));
    uint64_t *grown = realloc(*lat, (*nlat + t->nlat + 1) * sizeof(**lat));
    if (grown) {
        *lat = grown;
        memcpy(*lat + *nlat, t->latencies, t->nlat * sizeof(**lat));
        *nlat += t->nlat;
    }
    free(t->latencies);
}

/* Seal what goes out before the clock starts (scenarios, --pregen) and move
 * the plan's 0 to now. Returns 0 or -errno. */
static int sim_prepare(const struct sim_config *c, const struct delivery_plan *plan,
                       struct sim_thread *th, size_t nthreads, struct sim_agent *agents,
                       struct sim_result *out)
{
    uint64_t start = clock_mono_ns();

    if (*c->scenario && sim_scenario(c, plan, agents, out) < 0)
        return -EINVAL;
    if (c->pregen || *c->scenario) {
        for (size_t k = 0; k < nthreads && !*c->scenario; k++)
            if (sim_pregen(&th[k]) < 0)
                return -ENOMEM;
        uint64_t now = clock_mono_ns();
        for (size_t k = 0; k < nthreads; k++)
            sim_shift_due(&th[k], now - start);
    }
    return 0;
}

int sim_run(const struct sim_config *c, struct sim_result *out)
{
    size_t nagents = sim_plan_agents(c);
    size_t nthreads = c->threads < nagents ? c->threads : nagents;
    struct sim_agent *agents = calloc(nagents, sizeof(*agents));
    struct sim_thread *th = calloc(nthreads, sizeof(*th));
    struct rpc_channel *ch = rpc_channel_new(c->collector, NULL);
    struct delivery_plan *plan = NULL;
    FILE *log = NULL;
    uint64_t start, *lat = NULL;
    size_t nlat = 0;
    int r = -ENOMEM;

    memset(out, 0, sizeof(*out));
    out->truth_cause = "";
    if (!agents || !th || !ch)
        goto out;
    r = sim_plan_new(c, &plan, out->last_error, sizeof(out->last_error));
    if (r == 0 && c->send_log && *c->send_log && !(log = fopen(c->send_log, "we"))) {
        r = -errno;
        snprintf(out->last_error, sizeof(out->last_error), "%s: %s", c->send_log, strerror(-r));
    }
    if (r < 0)
        goto out;
    sim_setup_agents(c, plan, th, nthreads, agents, nagents);
    r = sim_prepare(c, plan, th, nthreads, agents, out);
    if (r < 0)
        goto out;
    start = clock_mono_ns();
    out->start_unix_ns = clock_real_ns();
    for (size_t k = 0; k < nthreads; k++) {
        th[k].ch = ch;
        th[k].q = rpc_queue_new();
        th[k].send_log = log;
        th[k].restamp = delivery_plan_restamps(plan) ||
                        (c->outage_replay == SIM_REPLAY_NEW_EPOCH && c->outage && *c->outage);
        pthread_create(&th[k].thread, NULL, sim_thread_main, &th[k]);
    }
    out->complete = true;
    for (size_t k = 0; k < nthreads; k++) {
        pthread_join(th[k].thread, NULL);
        rpc_queue_free(th[k].q);
        sim_collect(&th[k], out, &lat, &nlat);
    }
    out->elapsed_s = (double)(clock_mono_ns() - start) / 1e9;
    if (nlat) {
        qsort(lat, nlat, sizeof(*lat), sim_cmp_u64);
        out->ack_latency_p50_ms = (double)lat[nlat / 2] / 1e6;
        out->ack_latency_p99_ms = (double)lat[nlat * 99 / 100] / 1e6;
    }
    r = out->complete ? 0 : -ETIMEDOUT;
out:
    if (log && fclose(log) != 0 && r == 0)
        r = -EIO;
    free(lat);
    free(agents);
    free(th);
    delivery_plan_free(plan);
    rpc_channel_free(ch);
    return r;
}
