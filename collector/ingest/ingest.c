#include "collector/ingest/ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diagq.h"
#include "collector/store/store.h"
#include "collector/ingest/kernel_sets.h"
#include "collector/ingest/links.h"
#include "collector/ingest/owners.h"
#include "collector/ingest/stream_clock.h"
#include "collector/ingest/validate.h"
#include "collector/trace/trace_capture.h"
#include "common/clock.h"
#include "common/kernel_code.h"
#include "common/frame.h"
#include "common/log.h"
#include "common/name_id.h"
#include "common/rpc_paths.h"
#include "common/wire_steps.h"

struct ingest_drop {
    char *agent, *reason, *job;
    int32_t rank;
    uint64_t total;
};

struct ingest {
    struct store *store;
    pthread_mutex_t drops_lock;
    struct ingest_drop *drops;
    size_t ndrops;
    struct ingest_limits limits;
    struct diagq *diagq;
    struct stream_clock *clock;
    struct limits *admission;
    struct owners *owners;
    struct trace_capture *traces; /* may be NULL */
    struct links *links;          /* may be NULL */
    struct kernel_sets *ksets;
    atomic_uint_fast64_t batches, duplicates, bytes, rank_steps, acks, streams;
    atomic_uint_fast64_t rejects[INGEST_REJECT_COUNT];
};

/* Bytes of kernel identity sets ingest keeps in memory (kernel_sets.h). */
#define INGEST_KERNEL_SETS_CACHE (16u << 20)

struct ingest_stream {
    struct ingest *in;
    char peer[64];
    bool authenticated;              /* mTLS: identity is the certificate's */
    char identity[TLS_MAX_IDENTITY]; /* every batch must be this agent and node */
    char *agent;                     /* the agent links_up counted it for (NULL: none yet) */
    size_t sets_unknown; /* records of the batch at hand that referred to sets not held */
};

void ingest_default_limits(struct ingest_limits *l)
{
    *l = (struct ingest_limits){
        .max_frame = FRAME_DEFAULT_MAX_FRAME,
        .max_raw = FRAME_DEFAULT_MAX_RAW,
        .max_id_len = 128,
        .max_name_len = 4096,
        .max_names_per_batch = 65536,
        .max_steps_per_batch = 65536,
        .max_resources_per_batch = 4096,
        .max_groups_per_step = 4096,
        .max_statuses_per_batch = 4096,
        .max_comms_per_status = 64,
        .max_stack_frames = 64,
        .max_clusters_per_group = 64,
        .max_seq_jump = 1000000,
    };
    limits_default_options(&l->admit);
}

const char *ingest_reject_name(enum ingest_reject r)
{
    static const char *const names[] = {"frame_size", "frame_invalid", "batch_invalid",
                                        "limits",     "store_error",   "identity",
                                        "seq_jump",   "rank_owner"};
    return r < INGEST_REJECT_COUNT ? names[r] : "?";
}

#define REJECT(code, ...)                                                                          \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return (code);                                                                             \
    } while (0)

/* --- drop counters ----------------------------------------------------------- */

/* Remember the newest value of each reported drop counter. */
static void ingest_record_drops(struct ingest *in, const Argus__V1__Batch *b)
{
    pthread_mutex_lock(&in->drops_lock);
    for (size_t i = 0; i < b->n_drops; i++) {
        const Argus__V1__DropCounter *d = b->drops[i];
        size_t k;
        for (k = 0; k < in->ndrops; k++)
            if (in->drops[k].rank == d->rank && strcmp(in->drops[k].agent, b->agent_id) == 0 &&
                strcmp(in->drops[k].reason, d->reason) == 0 &&
                strcmp(in->drops[k].job, d->job) == 0)
                break;
        if (k == in->ndrops) {
            struct ingest_drop *grown = realloc(in->drops, (in->ndrops + 1) * sizeof(*grown));
            if (!grown)
                break;
            in->drops = grown;
            in->drops[k] = (struct ingest_drop){strdup(b->agent_id), strdup(d->reason),
                                                strdup(d->job), d->rank, 0};
            if (!in->drops[k].agent || !in->drops[k].reason || !in->drops[k].job)
                break;
            in->ndrops++;
        }
        in->drops[k].total = d->total;
    }
    pthread_mutex_unlock(&in->drops_lock);
}

void ingest_foreach_drop(struct ingest *in, ingest_drop_fn fn, void *ctx)
{
    pthread_mutex_lock(&in->drops_lock);
    for (size_t i = 0; i < in->ndrops; i++)
        fn(ctx, in->drops[i].agent, in->drops[i].reason, in->drops[i].job, in->drops[i].rank,
           in->drops[i].total);
    pthread_mutex_unlock(&in->drops_lock);
}

/* --- the stream handler ------------------------------------------------------- */

/* The rank owners over the store, loaded. A store that cannot be read
 * leaves the table empty (logged): every rank is claimed anew. */
static int ingest_owners_open(struct ingest *in)
{
    struct owners_options o = {
        .idle_ns = in->limits.admit.job_idle_ns,
        .max_jobs = in->limits.admit.max_jobs * 2,
        .max_ranks = in->limits.admit.max_ranks_per_job,
        .log_interval_ns = 60 * NSEC_PER_SEC,
    };
    char err[160];
    long n;

    if (!(in->owners = owners_new(&o, in->store)))
        return -ENOMEM;
    n = in->store ? owners_load(in->owners, clock_real_ns(), err, sizeof(err)) : 0;
    if (n < 0)
        log_warn("ingest", "%s: every rank is claimed anew", err);
    else if (n > 0)
        log_info("ingest", "rank owners loaded: %ld rank slots", n);
    return 0;
}

struct ingest *ingest_new(struct store *store, const struct ingest_limits *limits,
                          struct diagq *diagq, struct stream_clock *clock)
{
    struct ingest *in = calloc(1, sizeof(*in));

    if (!in)
        return NULL;
    in->store = store;
    in->limits = *limits;
    in->diagq = diagq;
    in->clock = clock;
    in->admission = limits_new(&limits->admit);
    in->ksets = kernel_sets_new(store, INGEST_KERNEL_SETS_CACHE);
    if (!in->admission || !in->ksets || ingest_owners_open(in) < 0) {
        limits_free(in->admission);
        kernel_sets_free(in->ksets);
        free(in);
        return NULL;
    }
    pthread_mutex_init(&in->drops_lock, NULL);
    return in;
}

void ingest_free(struct ingest *in)
{
    if (!in)
        return;
    limits_free(in->admission);
    kernel_sets_free(in->ksets);
    owners_free(in->owners);
    for (size_t i = 0; i < in->ndrops; i++) {
        free(in->drops[i].agent);
        free(in->drops[i].reason);
        free(in->drops[i].job);
    }
    free(in->drops);
    pthread_mutex_destroy(&in->drops_lock);
    free(in);
}

static void *ingest_open(void *ctx, const struct transport_peer *peer,
                         struct transport_reply *reply)
{
    struct ingest *in = ctx;
    struct ingest_stream *s;

    if (!transport_peer_may(peer, TLS_ROLE_AGENT, RPC_INGEST_PUSH, reply)) {
        static struct log_ratelimit rl = {.interval_ns = 10 * NSEC_PER_SEC, .burst = 5};
        atomic_fetch_add(&in->rejects[INGEST_REJECT_IDENTITY], 1);
        log_ratelimited(&rl, LOG_LEVEL_WARN, "ingest", "refused stream from %s: %s", peer->address,
                        reply->message);
        return NULL;
    }
    s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->in = in;
    snprintf(s->peer, sizeof(s->peer), "%s", peer->address);
    if (peer->identity) {
        s->authenticated = true;
        snprintf(s->identity, sizeof(s->identity), "%s", peer->identity);
    }
    atomic_fetch_add(&s->in->streams, 1);
    return s;
}

static void ingest_close(void *stream)
{
    struct ingest_stream *s = stream;

    atomic_fetch_sub(&s->in->streams, 1);
    if (s->agent)
        links_down(s->in->links, s->agent, clock_real_ns());
    free(s->agent);
    free(s);
}

static void ingest_reject(struct ingest_stream *s, enum ingest_reject why, int status,
                          struct transport_reply *reply, const char *msg)
{
    static struct log_ratelimit rl = {.interval_ns = 10 * NSEC_PER_SEC, .burst = 5};

    atomic_fetch_add(&s->in->rejects[why], 1);
    reply->status = status;
    snprintf(reply->message, sizeof(reply->message), "%s", msg);
    log_ratelimited(&rl, LOG_LEVEL_WARN, "ingest", "rejected batch from %s: %s", s->peer, msg);
}

static void ingest_ack(struct ingest_stream *s, const Argus__V1__Batch *b,
                       struct transport_reply *reply)
{
    Argus__V1__Ack ack = ARGUS__V1__ACK__INIT;

    ack.epoch = b->epoch;
    ack.seq = b->seq;
    ack.features = KERNEL_CODE_ACK_FEATURE | KERNEL_CODE_SET_ACK_FEATURE;
    ack.kernel_sets_unknown = s->sets_unknown > 0;
    if (s->in->traces)
        trace_capture_ack(s->in->traces, b, &ack);
    reply->len = argus__v1__ack__get_packed_size(&ack);
    reply->data = malloc(reply->len ? reply->len : 1);
    if (reply->data)
        argus__v1__ack__pack(&ack, reply->data);
    trace_capture_ack_done(&ack);
    if (!reply->data) {
        reply->status = TRANSPORT_INTERNAL;
        snprintf(reply->message, sizeof(reply->message), "out of memory");
        return;
    }
    atomic_fetch_add(&s->in->acks, 1);
}

/* Find the bytes of every Batch.steps entry in the packed batch, in order,
 * so the store keeps them without packing each record again. Returns the
 * number found (the caller checks it against n_steps), or -EBADMSG. The
 * batch already unpacked, so this only has to be right, not defensive. */
static long ingest_step_slices(const uint8_t *raw, size_t len, struct store_slice *out, size_t max)
{
    struct wire_steps_reader rd;
    const uint8_t *record;
    size_t record_len;
    long n = 0;
    int r;

    wire_steps_reader_init(&rd, raw, len);
    while ((r = wire_steps_next(&rd, &record, &record_len)) > 0) {
        if ((size_t)n >= max)
            return -EBADMSG;
        out[n++] = (struct store_slice){(const char *)record, record_len};
    }
    return r < 0 ? r : n;
}

/* A bump allocator for unpacking one batch: a batch of step records is
 * thousands of small submessages, and malloc/free of each was a tenth of the
 * collector's CPU. Everything goes at once with the arena. */
struct ingest_arena {
    char *chunk;
    size_t used, cap;
    char **old; /* full chunks */
    size_t nold;
    size_t bytes; /* all chunks */
    size_t first; /* size of the first chunk (0: 256 KiB) */
};

static void *ingest_arena_alloc(void *ctx, size_t size)
{
    struct ingest_arena *a = ctx;

    size = (size + 15) & ~(size_t)15;
    if (!a->chunk || a->used + size > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : a->first ? a->first : 256 * 1024;
        while (cap < size)
            cap *= 2;
        char **old = realloc(a->old, (a->nold + 1) * sizeof(*old));
        if (!old)
            return NULL;
        a->old = old;
        char *chunk = malloc(cap);
        if (!chunk)
            return NULL;
        if (a->chunk)
            a->old[a->nold++] = a->chunk;
        a->chunk = chunk;
        a->cap = cap;
        a->bytes += cap;
        a->used = 0;
    }
    void *p = a->chunk + a->used;
    a->used += size;
    return p;
}

static void ingest_arena_free(void *ctx, void *p)
{
}

/* Free the arena and everything allocated from it (a diagq_release_fn). */
static void ingest_arena_release(void *arena)
{
    struct ingest_arena *a = arena;

    for (size_t i = 0; i < a->nold; i++)
        free(a->old[i]);
    free(a->old);
    free(a->chunk);
    free(a);
}

/* The agent's clock against ours: log a stream crossing the bound, once. */
static void ingest_observe_clock(struct ingest *in, const Argus__V1__Batch *b, uint64_t recv)
{
    enum stream_clock_event ev;
    int64_t off;

    if (!in->clock || !b->created_unix_ns)
        return;
    ev = stream_clock_observe(in->clock, b->agent_id, b->created_unix_ns, recv, &off);
    if (ev == STREAM_CLOCK_FLAGGED)
        log_warn("ingest",
                 "the clock of agent %s is %+.3f s off the collector's (its batches' creation "
                 "time against their receive time; ingest.clock_skew_warn): its step times stay "
                 "its own, retention and first/last seen use the collector's clock",
                 b->agent_id, off / 1e9);
    else if (ev == STREAM_CLOCK_RECOVERED)
        log_info("ingest", "the clock of agent %s is back within the bound (%+.3f s)", b->agent_id,
                 off / 1e9);
}

/* mTLS: b must be the stream's certificate's agent and node. Plaintext: its
 * seq must not jump more than max_seq_jump above the stored high-water mark. */
static int ingest_check_identity(struct ingest_stream *s, const Argus__V1__Batch *b,
                                 enum ingest_reject *why, char *err, size_t errlen)
{
    uint64_t high = 0;

    *why = INGEST_REJECT_IDENTITY;
    if (s->authenticated && strcmp(b->agent_id, s->identity) != 0)
        REJECT(TRANSPORT_PERMISSION_DENIED,
               "the certificate of '%s' may not write batches of agent '%.128s'", s->identity,
               b->agent_id);
    for (size_t i = 0; s->authenticated && i < b->n_resources; i++)
        if (*b->resources[i]->node && strcmp(b->resources[i]->node, s->identity) != 0)
            REJECT(TRANSPORT_PERMISSION_DENIED,
                   "the certificate of '%s' may not write resources of node '%.128s' (job %.128s)",
                   s->identity, b->resources[i]->node, b->resources[i]->job);
    *why = INGEST_REJECT_SEQ_JUMP;
    if (!s->authenticated && s->in->limits.max_seq_jump &&
        store_high_water(s->in->store, b->agent_id, b->epoch, &high) == 0 && high &&
        b->seq > high && b->seq - high > s->in->limits.max_seq_jump)
        REJECT(TRANSPORT_FAILED_PRECONDITION,
               "seq %" PRIu64 " of agent %.128s epoch %" PRIu64 " is more than %" PRIu64
               " above the last stored seq %" PRIu64 " (ingest.max_seq_jump)",
               b->seq, b->agent_id, b->epoch, s->in->limits.max_seq_jump, high);
    return TRANSPORT_OK;
}

/* Every rank b writes must be its sender's (owners.h; the sender is the
 * certificate's identity under mTLS, which ingest_check_identity made the
 * batch's agent id, and the claimed agent id in plaintext). A batch the store
 * already holds is not judged: it is acked without writing. */
static int ingest_check_owners(struct ingest_stream *s, const Argus__V1__Batch *b, uint64_t recv,
                               char *err, size_t errlen)
{
    uint64_t high = 0;

    if (store_high_water(s->in->store, b->agent_id, b->epoch, &high) == 0 && b->seq <= high)
        return TRANSPORT_OK;
    return owners_judge(s->in->owners, b, s->authenticated ? s->identity : b->agent_id, recv, err,
                        errlen);
}

/* Validate, store and ack b (unpacked into *arena, from raw; NULL: b was
 * changed after unpacking, the store packs its records again). A stored
 * batch goes to diagnosis through the queue, which takes the arena: *arena
 * is NULL then. */
static void ingest_store(struct ingest_stream *s, Argus__V1__Batch *b, const void *raw,
                         size_t raw_len, uint64_t recv, struct ingest_arena **arena,
                         struct transport_reply *reply)
{
    char err[256], msg[320];
    enum ingest_reject why;
    int r = ingest_validate(b, &s->in->limits, err, sizeof(err));

    if (r == TRANSPORT_OK && (r = ingest_check_identity(s, b, &why, err, sizeof(err))) != 0) {
        ingest_reject(s, why, r, reply, err);
        return;
    }
    if (r == TRANSPORT_OK)
        r = limits_admit(s->in->admission, b, recv, err, sizeof(err));
    if (r != TRANSPORT_OK) {
        ingest_reject(s, INGEST_REJECT_LIMITS, r, reply, err);
        return;
    }
    if ((r = ingest_check_owners(s, b, recv, err, sizeof(err))) != TRANSPORT_OK) {
        atomic_fetch_add(&s->in->rejects[INGEST_REJECT_RANK_OWNER], 1);
        reply->status = r; /* owners.c logged it, once per (job, rank, intruder) */
        snprintf(reply->message, sizeof(reply->message), "%s", err);
        return;
    }
    struct store_slice *slices = b->n_steps && raw ? malloc(b->n_steps * sizeof(*slices)) : NULL;
    if (slices && ingest_step_slices(raw, raw_len, slices, b->n_steps) != (long)b->n_steps) {
        free(slices); /* unexpected layout: let the store pack the records */
        slices = NULL;
    }
    /* the sets the records define first: an agent that sees the ack may refer to them */
    r = raw ? 0 : kernel_sets_keep(s->in->ksets, b, err, sizeof(err));
    if (r == 0)
        r = store_ingest_raw(s->in->store, b, slices, recv, err, sizeof(err));
    free(slices);
    if (r < 0) {
        snprintf(msg, sizeof(msg), "store write failed, batch not acked, retry later: %s", err);
        ingest_reject(s, INGEST_REJECT_STORE_ERROR, TRANSPORT_UNAVAILABLE, reply, msg);
        return;
    }
    ingest_observe_clock(s->in, b, recv);
    if (r == STORE_INGEST_DUPLICATE) {
        atomic_fetch_add(&s->in->duplicates, 1);
    } else {
        atomic_fetch_add(&s->in->batches, 1);
        atomic_fetch_add(&s->in->rank_steps, b->n_steps);
        if (b->n_drops)
            ingest_record_drops(s->in, b);
        if (b->n_traces && s->in->traces)
            trace_capture_ingest(s->in->traces, b);
    }
    if (!s->agent && s->in->links && (s->agent = strdup(b->agent_id)) &&
        links_up(s->in->links, s->agent, recv) < 0) {
        free(s->agent); /* the agent stays unknown, which counts as up */
        s->agent = NULL;
    }
    /* the ack first: once pushed, the batch (and its arena) belongs to the
     * diagnosis thread, which may free it at once */
    ingest_ack(s, b, reply);
    if (r != STORE_INGEST_DUPLICATE && s->in->diagq) {
        diagq_push(s->in->diagq, b, recv, (*arena)->bytes + sizeof(**arena), ingest_arena_release,
                   *arena);
        *arena = NULL;
    }
}

static void ingest_message(void *stream, const void *data, size_t len,
                           struct transport_reply *reply)
{
    struct ingest_stream *s = stream;
    struct frame_limits fl = {s->in->limits.max_frame, s->in->limits.max_raw};
    uint64_t recv = clock_real_ns();
    char msg[256];
    void *raw;
    size_t raw_len;
    int r;

    atomic_fetch_add(&s->in->bytes, len);
    r = frame_decode(data, len, &fl, &raw, &raw_len, NULL);
    if (r < 0) {
        bool size = r == FRAME_ERR_OVERSIZE || r == FRAME_ERR_RAW_TOO_BIG;
        snprintf(msg, sizeof(msg), "frame rejected: %s (%zu bytes; limits %zu frame, %zu raw)",
                 frame_strerror(r), len, fl.max_frame, fl.max_raw);
        ingest_reject(s, size ? INGEST_REJECT_FRAME_SIZE : INGEST_REJECT_FRAME_INVALID,
                      size ? TRANSPORT_RESOURCE_EXHAUSTED : TRANSPORT_INVALID_ARGUMENT, reply, msg);
        return;
    }
    struct ingest_arena *arena = calloc(1, sizeof(*arena));
    if (arena) /* a batch unpacks into about 5 times its encoded size */
        arena->first = ((raw_len * 6 > 16384 ? raw_len * 6 : 16384) + 4095) & ~(size_t)4095;
    ProtobufCAllocator alloc = {ingest_arena_alloc, ingest_arena_free, arena};
    Argus__V1__Batch *b = arena ? argus__v1__batch__unpack(&alloc, raw_len, raw) : NULL;
    if (!b) {
        if (arena)
            ingest_arena_release(arena);
        free(raw);
        ingest_reject(s, INGEST_REJECT_BATCH_INVALID, TRANSPORT_INVALID_ARGUMENT, reply,
                      arena ? "frame payload is not a valid argus.v1.Batch" : "out of memory");
        return;
    }
    /* coded kernels become KernelGroups first: out of memory is retried, the rest refused */
    long coded = kernel_sets_expand(s->in->ksets, b, s->in->limits.max_groups_per_step,
                                    s->in->limits.max_clusters_per_group, &alloc, &s->sets_unknown);
    bool retry = coded == -ENOMEM || coded == -EIO;
    if (coded < 0)
        ingest_reject(s, INGEST_REJECT_BATCH_INVALID,
                      retry ? TRANSPORT_UNAVAILABLE : TRANSPORT_INVALID_ARGUMENT, reply,
                      retry ? "out of memory or store unreadable expanding packed_kernels, retry "
                              "later"
                            : "malformed or oversized StepRecord.packed_kernels");
    else
        ingest_store(s, b, coded ? NULL : raw, raw_len, recv, &arena, reply);
    if (arena)
        ingest_arena_release(arena); /* the whole unpacked batch, when not queued */
    free(raw);
}

const struct transport_stream_ops ingest_stream_ops = {
    .open = ingest_open,
    .message = ingest_message,
    .close = ingest_close,
};

void ingest_set_traces(struct ingest *in, struct trace_capture *traces)
{
    in->traces = traces;
}

void ingest_set_links(struct ingest *in, struct links *links)
{
    in->links = links;
}

struct limits *ingest_admission(struct ingest *in)
{
    return in->admission;
}

struct owners *ingest_owners(struct ingest *in)
{
    return in->owners;
}

void ingest_get_stats(struct ingest *in, struct ingest_stats *out)
{
    out->batches = atomic_load(&in->batches);
    out->duplicates = atomic_load(&in->duplicates);
    out->bytes = atomic_load(&in->bytes);
    out->rank_steps = atomic_load(&in->rank_steps);
    out->acks = atomic_load(&in->acks);
    out->streams = atomic_load(&in->streams);
    out->unreachable = in->links ? links_unreachable(in->links) : 0;
    for (int i = 0; i < INGEST_REJECT_COUNT; i++)
        out->rejects[i] = atomic_load(&in->rejects[i]);
    kernel_sets_get_stats(in->ksets, &out->kernel_sets);
}
