#include "agent/delivery/batcher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/delivery/ksets.h"
#include "common/clock.h"
#include "common/kernel_code.h"
#include "common/frame.h"
#include "common/varint.h"
#include "common/wire_steps.h"

struct batcher {
    struct batcher_options o;
    char *agent_id;
    struct names *names;
    const struct drops *drops; /* may be NULL */
    uint8_t *buf;              /* packed StepRecords, each as Batch field 6 */
    size_t len, cap;
    size_t nsteps;
    size_t ntraces;   /* Batch.traces entries in buf */
    size_t nstatuses; /* Batch.statuses entries in buf */
    bool exited;      /* one of them is a rank's end: the batch is due at once */
    uint64_t first_ns;
    uint64_t last_seal_ns;
    uint64_t drops_sealed; /* drops_version at the last seal */
    long *jobs;            /* distinct names_job_index values of the open batch */
    size_t njobs, jobs_cap;
    bool jobs_lost;    /* a job of the open batch was not noted (out of memory) */
    long *sealed_jobs; /* ... and of the last sealed one (the arrays swap) */
    size_t nsealed, sealed_cap;
    bool sealed_jobless;
    struct batcher_stats stats;
    bool coding;                  /* batcher_set_coding */
    bool sets;                    /* batcher_set_kernel_sets */
    struct kernel_code_buf code;  /* the coded copy of the step being added */
    struct kernel_code_prev last; /* the open batch's last step, to code the next against */
};

#define BATCHER_RETRY_NS (10 * NSEC_PER_MSEC)

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

struct batcher *batcher_new(const struct batcher_options *o, struct names *names,
                            const struct drops *drops)
{
    struct batcher *b = calloc(1, sizeof(*b));

    if (!b)
        return NULL;
    b->o = *o;
    b->agent_id = strdup(o->agent_id ? o->agent_id : "agent");
    b->names = names;
    b->drops = drops;
    if (!b->agent_id) {
        free(b);
        return NULL;
    }
    return b;
}

void batcher_free(struct batcher *b)
{
    if (!b)
        return;
    free(b->buf);
    kernel_code_buf_free(&b->code);
    kernel_code_prev_free(&b->last);
    free(b->jobs);
    free(b->sealed_jobs);
    free(b->agent_id);
    free(b);
}

/* The open batch holds something of job j (a names_job_index). A batch
 * holds a few jobs: the newest is checked first, then the rest. Out of
 * memory the job is not noted, and the batch is sealed as jobless (sent to
 * every collector) rather than to too few. */
static void batcher_note_job(struct batcher *b, long j)
{
    if (j < 0 || (b->njobs && b->jobs[b->njobs - 1] == j))
        return;
    for (size_t i = 0; i + 1 < b->njobs; i++)
        if (b->jobs[i] == j)
            return;
    if (b->njobs == b->jobs_cap) {
        size_t cap = b->jobs_cap ? b->jobs_cap * 2 : 8;
        long *grown = realloc(b->jobs, cap * sizeof(*grown));
        if (!grown) {
            b->jobs_lost = true;
            return;
        }
        b->jobs = grown;
        b->jobs_cap = cap;
    }
    b->jobs[b->njobs++] = j;
}

static void batcher_reference(struct batcher *b, const Argus__V1__StepRecord *s, long j)
{
    if (j < 0)
        return;
    batcher_note_job(b, j);
    for (size_t i = 0; i < s->n_phases; i++)
        names_reference_at(b->names, j, s->phases[i]->name_id);
    for (size_t i = 0; i < s->n_kernels; i++)
        names_reference_at(b->names, j, s->kernels[i]->name_id);
    for (size_t i = 0; i < s->n_collectives; i++)
        names_reference_at(b->names, j, s->collectives[i]->name_id);
    for (size_t i = 0; i < s->n_top_frames; i++)
        names_reference_at(b->names, j, s->top_frames[i]->name_id);
}

/* Room for need bytes in buf. 0 or -ENOMEM. */
static int batcher_reserve(struct batcher *b, size_t need)
{
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64 * 1024;
        while (cap < need)
            cap *= 2;
        uint8_t *grown = realloc(b->buf, cap);
        if (!grown)
            return -ENOMEM;
        b->buf = grown;
        b->cap = cap;
    }
    return 0;
}

/* Batch.traces: field 9, length-delimited */
#define BATCHER_TRACES_KEY ((9u << 3) | WIRE_TYPE_LEN)

int batcher_add_trace(struct batcher *b, const void *packed, size_t len)
{
    uint8_t *p;

    if (batcher_reserve(b, b->len + 1 + varint_size(len) + len) < 0)
        return -ENOMEM;
    p = b->buf + b->len;
    *p++ = BATCHER_TRACES_KEY;
    p = varint_put(p, len);
    memcpy(p, packed, len);
    b->len = (size_t)(p + len - b->buf);
    b->ntraces++;
    return 0;
}

/* Batch.statuses: field 10, length-delimited */
#define BATCHER_STATUSES_KEY ((10u << 3) | WIRE_TYPE_LEN)

static void batcher_reference_status(struct batcher *b, const Argus__V1__RankStatus *s)
{
    long j = names_job_index(b->names, s->job);

    if (j < 0)
        return;
    batcher_note_job(b, j);
    for (size_t i = 0; i < s->n_comms; i++)
        names_reference_at(b->names, j, s->comms[i]->name_id);
    for (size_t i = 0; i < s->n_stack; i++)
        names_reference_at(b->names, j, s->stack[i]);
}

/* The open batch holds its first entry (step or status) from now_ns. */
static void batcher_opened(struct batcher *b, uint64_t now_ns)
{
    if (b->nsteps == 0 && b->nstatuses == 0)
        b->first_ns = now_ns;
}

int batcher_add_status(struct batcher *b, const Argus__V1__RankStatus *s, uint64_t now_ns)
{
    size_t n = argus__v1__rank_status__get_packed_size(s);
    uint8_t *p;

    if (batcher_reserve(b, b->len + 1 + varint_size(n) + n) < 0)
        return -ENOMEM;
    batcher_opened(b, now_ns);
    p = b->buf + b->len;
    *p++ = BATCHER_STATUSES_KEY;
    p = varint_put(p, n);
    b->len = (size_t)(p + argus__v1__rank_status__pack(s, p) - b->buf);
    b->nstatuses++;
    b->exited |= s->exited;
    b->stats.statuses++;
    batcher_reference_status(b, s);
    return 0;
}

void batcher_set_coding(struct batcher *b, bool on)
{
    b->coding = on;
}

void batcher_set_kernel_sets(struct batcher *b, bool on)
{
    b->sets = on;
}

/* Code s into *coded: its groups whole, as the batch's previous record's, or
 * against the identity set of its skeleton the collectors hold (ksets.h).
 * *define: the skeleton whose set s defines once it is in the batch (0:
 * none). */
static void batcher_code(struct batcher *b, const Argus__V1__StepRecord *s, long job,
                         Argus__V1__StepRecord *coded, uint64_t *define)
{
    struct ksets_plan plan = {.use = KSETS_WHOLE};

    *define = 0;
    if (!b->coding)
        return;
    if (b->sets && job >= 0 && kernel_code_codable(s))
        ksets_plan(names_ksets(b->names), job, s, &plan);
    if (kernel_code_compact_as(&b->code, s, &b->last, plan.use == KSETS_REFER ? &plan.base : NULL,
                               coded) < 0)
        return; /* out of memory: s as it is */
    b->stats.sets_referred += coded->packed_kernels_as_set;
    if (plan.use == KSETS_DEFINE && coded->packed_kernels.len) {
        coded->packed_kernels_set = plan.define;
        *define = plan.skel;
    }
}

int batcher_add_step(struct batcher *b, const Argus__V1__StepRecord *s, uint64_t now_ns)
{
    Argus__V1__StepRecord coded = *s; /* s with its kernels coded: out of memory, s as it is */
    long job = names_job_index(b->names, s->job);
    uint64_t define;
    size_t n, need;

    batcher_code(b, s, job, &coded, &define);
    b->stats.coded += coded.packed_kernels.len > 0;
    n = wire_steps_record_size(&coded);
    need = b->len + n + WIRE_STEPS_ENTRY_OVERHEAD;
    if (batcher_reserve(b, need) < 0)
        return -ENOMEM;
    b->len += wire_steps_entry_put(b->buf + b->len, &coded, n);
    if (define)
        ksets_defined(names_ksets(b->names), job, define);
    kernel_code_prev_set(&b->last, s); /* out of memory: the next is coded whole */
    batcher_opened(b, now_ns);
    b->nsteps++;
    b->stats.steps++;
    batcher_reference(b, s, job);
    return 0;
}

/* A drop counter changed since the last sealed batch. */
static bool batcher_drops_dirty(const struct batcher *b)
{
    return b->drops && drops_version(b->drops) != b->drops_sealed;
}

bool batcher_due(const struct batcher *b, uint64_t now_ns)
{
    if (b->ntraces || b->exited)
        return true;
    if (!b->nsteps && !b->nstatuses) {
        /* new ranks and changed drop counters reach the collector even when no
         * step does, at most once per max_age */
        return (names_unsent_resources(b->names) || batcher_drops_dirty(b)) &&
               now_ns - b->last_seal_ns >= b->o.max_age_ns;
    }
    return b->nsteps + b->nstatuses >= b->o.max_steps || b->len >= b->o.max_bytes ||
           now_ns - b->first_ns >= b->o.max_age_ns;
}

uint64_t batcher_next_ns(const struct batcher *b)
{
    /* a seal that failed (out of memory) is retried, not spun on */
    if (b->ntraces || b->exited)
        return b->last_seal_ns + BATCHER_RETRY_NS;
    if (b->nsteps || b->nstatuses)
        return max_u64(b->first_ns + b->o.max_age_ns, b->last_seal_ns + BATCHER_RETRY_NS);
    if (names_unsent_resources(b->names) || batcher_drops_dirty(b))
        return b->last_seal_ns + b->o.max_age_ns;
    return UINT64_MAX;
}

size_t batcher_steps(const struct batcher *b)
{
    return b->nsteps;
}

/* The drop counters as DropCounter messages pointing into the table. */
struct batcher_drops_out {
    Argus__V1__DropCounter *dc;
    Argus__V1__DropCounter **dp;
    size_t n;
};

static void batcher_drop_counter(void *ctx, const char *reason, const char *job, int32_t rank,
                                 uint64_t total)
{
    struct batcher_drops_out *out = ctx;
    Argus__V1__DropCounter *dc = &out->dc[out->n];

    argus__v1__drop_counter__init(dc);
    dc->reason = (char *)reason;
    dc->job = (char *)(job ? job : "");
    dc->rank = rank;
    dc->total = total;
    out->dp[out->n++] = dc;
}

/* Pack the batch header (everything but the steps) into a new buffer with
 * room for the steps after it. */
static uint8_t *batcher_header(struct batcher *b, uint64_t epoch, uint64_t seq, size_t *hlen)
{
    Argus__V1__Batch batch = ARGUS__V1__BATCH__INIT;
    size_t ndrops = b->drops ? drops_count(b->drops) : 0;
    struct batcher_drops_out drops = {calloc(ndrops + 1, sizeof(*drops.dc)),
                                      calloc(ndrops + 1, sizeof(*drops.dp)), 0};
    uint8_t *out = NULL;

    if (!drops.dc || !drops.dp)
        goto out;
    batch.agent_id = b->agent_id;
    batch.epoch = epoch;
    batch.seq = seq;
    batch.created_unix_ns = clock_real_ns();
    batch.n_names = names_take(b->names, seq, &batch.names);
    batch.n_resources = names_take_resources(b->names, seq, &batch.resources);
    for (size_t i = 0; i < batch.n_resources; i++) /* a rank's resource goes where its job goes */
        batcher_note_job(b, names_job_index(b->names, batch.resources[i]->job));
    if (b->drops)
        drops_foreach(b->drops, batcher_drop_counter, &drops);
    batch.n_drops = drops.n;
    batch.drops = drops.dp;
    *hlen = argus__v1__batch__get_packed_size(&batch);
    out = malloc(*hlen + b->len + 1);
    if (out)
        argus__v1__batch__pack(&batch, out);
out:
    free(drops.dc);
    free(drops.dp);
    return out;
}

/* The open batch's jobs become the sealed batch's; the open one starts
 * with none. */
static void batcher_sealed_swap(struct batcher *b)
{
    long *jobs = b->sealed_jobs;
    size_t cap = b->sealed_cap;

    b->sealed_jobless = b->ntraces > 0 || b->njobs == 0 || b->jobs_lost;
    b->jobs_lost = false;
    b->sealed_jobs = b->jobs;
    b->sealed_cap = b->jobs_cap;
    b->nsealed = b->njobs;
    b->jobs = jobs;
    b->jobs_cap = cap;
    b->njobs = 0;
}

int batcher_seal(struct batcher *b, uint64_t epoch, uint64_t seq, void **frame, size_t *len)
{
    size_t hlen;
    uint8_t *raw;
    int r;

    if (!b->nsteps && !b->ntraces && !b->nstatuses && !names_unsent_resources(b->names) &&
        !batcher_drops_dirty(b))
        return -ENODATA;
    b->drops_sealed = b->drops ? drops_version(b->drops) : 0;
    b->last_seal_ns = clock_mono_ns();
    raw = batcher_header(b, epoch, seq, &hlen);
    if (!raw)
        return -ENOMEM;
    /* concatenated messages merge: the steps become Batch.steps, the
     * statuses Batch.statuses (b->buf is NULL until the first entry) */
    if (b->len)
        memcpy(raw + hlen, b->buf, b->len);
    r = frame_encode(raw, hlen + b->len, FRAME_CODEC_LZ4, frame, len);
    if (r == 0) {
        batcher_sealed_swap(b);
        b->stats.batches++;
        b->stats.raw_bytes += hlen + b->len;
        b->stats.frame_bytes += *len;
        b->len = 0;
        b->nsteps = 0;
        kernel_code_prev_clear(&b->last);
        b->ntraces = 0;
        b->nstatuses = 0;
        b->exited = false;
    }
    free(raw);
    return r;
}

void batcher_last_sealed(const struct batcher *b, struct batcher_sealed *out)
{
    out->jobs = b->sealed_jobs;
    out->njobs = b->nsealed;
    out->jobless = b->sealed_jobless;
}

void batcher_get_stats(const struct batcher *b, struct batcher_stats *out)
{
    *out = b->stats;
}
