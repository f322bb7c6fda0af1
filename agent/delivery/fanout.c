/* The fan-out of the spool to a collector set (see fanout.h): the members
 * and their exporters, the ring of which members each unacked seq is meant
 * for, and the watermarks that follow from the members' ack cursors. */
#include "agent/delivery/fanout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/ksets.h"
#include "agent/delivery/names.h"
#include "agent/delivery/spool.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/tls.h"
#include "common/u64set.h"

#define FANOUT_JOBS_INLINE 6           /* jobs a ring entry names; a batch of more goes to all */
#define FANOUT_REFRESH_NS NSEC_PER_SEC /* how often the members' unacked counts are taken */

/* One unacked seq: which members it is meant for, and why (its jobs, to
 * place it again when the members change). */
struct fanout_entry {
    uint64_t seq;
    uint64_t mask; /* bit i: member i */
    uint32_t job[FANOUT_JOBS_INLINE];
    uint8_t njobs;
    bool many;    /* more jobs than job[] holds: every member */
    bool jobless; /* also of no job: every member of an active job */
};

/* A job (by names_job_index): its members, placed at placement generation gen. */
struct fanout_job {
    uint64_t mask, gen, seen_ns;
};

struct fanout_member {
    struct fanout *f;
    size_t index; /* in f->m and the masks' bits */
    struct collector_member who;
    struct exporter *e;
    uint64_t progress_ns; /* its last ack, or the last time it had nothing to wait for */
    uint64_t last_acked;
    uint64_t unacked, behind_dropped;
    uint64_t sets_unknown; /* its exporter's kernel_sets_unknown, last seen */
    bool behind;
};

struct fanout {
    struct fanout_options o;
    struct tls_pem tls; /* o.tls copied: new members need it */
    struct spool *spool;
    struct names *names;
    struct drops *drops;
    struct collector_set set;
    struct fanout_member *m[COLLECTOR_SET_MAX];
    uint64_t gen; /* placement generation: bumped with each new set */
    struct fanout_job *jobs;
    size_t jobs_cap;
    struct fanout_entry *ring; /* ascending seqs from head */
    size_t head, count, cap;
    struct u64set rejected; /* seqs a collector refused: meant for none */
    uint64_t rejected_max;
    uint64_t refresh_ns;
    struct log_ratelimit rl;
};

static uint64_t fanout_all(const struct fanout *f)
{
    return f->set.n >= 64 ? UINT64_MAX : (UINT64_C(1) << f->set.n) - 1;
}

static int fanout_tls_copy(struct tls_pem *to, const struct tls_pem *from)
{
    memset(to, 0, sizeof(*to));
    if (!from)
        return 0;
    memcpy(to->ca_file, from->ca_file, sizeof(to->ca_file)); /* the names, for messages */
    memcpy(to->cert_file, from->cert_file, sizeof(to->cert_file));
    memcpy(to->key_file, from->key_file, sizeof(to->key_file));
    to->ca = strdup(from->ca ? from->ca : "");
    to->cert = strdup(from->cert ? from->cert : "");
    to->key = strdup(from->key ? from->key : "");
    return to->ca && to->cert && to->key ? 0 : -ENOMEM;
}

struct fanout *fanout_new(const struct fanout_options *o, struct spool *spool, struct names *names,
                          struct drops *drops)
{
    struct fanout *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->o = *o;
    f->spool = spool;
    f->names = names;
    f->drops = drops;
    f->rl = (struct log_ratelimit){.interval_ns = 60 * NSEC_PER_SEC, .burst = 3};
    if (fanout_tls_copy(&f->tls, o->tls) < 0) {
        fanout_free(f);
        return NULL;
    }
    f->o.tls = o->tls ? &f->tls : NULL;
    return f;
}

static void fanout_member_free(struct fanout_member *m)
{
    if (!m)
        return;
    exporter_free(m->e);
    free(m);
}

void fanout_free(struct fanout *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->set.n; i++)
        fanout_member_free(f->m[i]);
    tls_pem_free(&f->tls);
    u64set_clear(&f->rejected);
    free(f->jobs);
    free(f->ring);
    free(f);
}

/* --- placement ------------------------------------------------------------- */

/* The members of job j (names_job_index) as a mask; 0 when out of memory
 * (the caller then sends to all). */
static uint64_t fanout_job_mask(struct fanout *f, uint32_t j, uint64_t now_ns)
{
    size_t out[2], n;

    if (j >= f->jobs_cap) {
        size_t cap = f->jobs_cap ? f->jobs_cap : 16;
        while (cap <= j)
            cap *= 2;
        struct fanout_job *grown = realloc(f->jobs, cap * sizeof(*grown));
        if (!grown)
            return 0;
        memset(grown + f->jobs_cap, 0, (cap - f->jobs_cap) * sizeof(*grown));
        f->jobs = grown;
        f->jobs_cap = cap;
    }
    struct fanout_job *job = &f->jobs[j];
    if (now_ns)
        job->seen_ns = now_ns;
    if (job->gen != f->gen) {
        n = collector_set_place(&f->set, names_job_name(f->names, j), out);
        job->mask = 0;
        for (size_t i = 0; i < n; i++)
            job->mask |= UINT64_C(1) << out[i];
        job->gen = f->gen;
    }
    return job->mask;
}

/* The members of every job sent in the last FANOUT_ACTIVE_NS: where a
 * batch of no job goes (every member when there is none). */
static uint64_t fanout_active_mask(struct fanout *f, uint64_t now_ns)
{
    uint64_t mask = 0;

    for (size_t j = 0; j < f->jobs_cap; j++)
        if (f->jobs[j].seen_ns && now_ns - f->jobs[j].seen_ns < FANOUT_ACTIVE_NS)
            mask |= fanout_job_mask(f, (uint32_t)j, 0);
    return mask ? mask : fanout_all(f);
}

static void fanout_place_entry(struct fanout *f, struct fanout_entry *e, uint64_t now_ns)
{
    uint64_t mask = 0, all = fanout_all(f);

    if (e->many) {
        e->mask = all;
        return;
    }
    for (size_t k = 0; k < e->njobs; k++) {
        uint64_t jm = fanout_job_mask(f, e->job[k], 0);
        mask |= jm ? jm : all;
    }
    if (e->jobless)
        mask |= fanout_active_mask(f, now_ns);
    e->mask = mask;
}

/* --- the ring of unacked seqs ----------------------------------------------- */

static struct fanout_entry *fanout_at(const struct fanout *f, size_t k)
{
    return &f->ring[(f->head + k) % f->cap];
}

/* The ring's entry of seq, or NULL when the ring does not know it. */
static const struct fanout_entry *fanout_find(const struct fanout *f, uint64_t seq)
{
    size_t lo = 0, hi = f->count;

    if (!f->count || seq < fanout_at(f, 0)->seq)
        return NULL;
    if (seq - fanout_at(f, 0)->seq < f->count &&
        fanout_at(f, seq - fanout_at(f, 0)->seq)->seq == seq)
        return fanout_at(f, seq - fanout_at(f, 0)->seq); /* no gap before it: the usual case */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fanout_at(f, mid)->seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->count && fanout_at(f, lo)->seq == seq ? fanout_at(f, lo) : NULL;
}

static int fanout_ring_grow(struct fanout *f)
{
    size_t cap = f->cap ? f->cap * 2 : 256;
    struct fanout_entry *ring = malloc(cap * sizeof(*ring));

    if (!ring)
        return -ENOMEM;
    for (size_t k = 0; k < f->count; k++)
        ring[k] = *fanout_at(f, k);
    free(f->ring);
    f->ring = ring;
    f->cap = cap;
    f->head = 0;
    return 0;
}

/* Forget the seqs <= acked (the spool's watermark passed them). */
static void fanout_ring_pop(struct fanout *f, uint64_t acked)
{
    while (f->count && fanout_at(f, 0)->seq <= acked) {
        f->head = (f->head + 1) % f->cap;
        f->count--;
    }
    if (f->rejected_max && f->rejected_max <= acked) {
        u64set_clear(&f->rejected);
        f->rejected_max = 0;
    }
}

bool fanout_wants(const struct fanout *f, size_t i, uint64_t seq)
{
    const struct fanout_entry *e;

    if (f->rejected_max && u64set_has(&f->rejected, seq))
        return false;
    e = fanout_find(f, seq);
    return !e || (e->mask >> i & 1); /* unknown: a duplicate over a miss */
}

static bool fanout_member_wants(void *ctx, uint64_t seq)
{
    struct fanout_member *m = ctx;

    return fanout_wants(m->f, m->index, seq);
}

/* A collector refused seq as invalid: it is invalid for every collector,
 * dropped and counted once. */
static void fanout_member_reject(void *ctx, uint64_t seq)
{
    struct fanout *f = ((struct fanout_member *)ctx)->f;

    if (u64set_add(&f->rejected, seq) == 0)
        return; /* another member refused it first */
    drops_add(f->drops, EXPORTER_DROP_REJECTED, NULL, -1, 1);
    if (seq > f->rejected_max)
        f->rejected_max = seq;
}

/* --- records in ------------------------------------------------------------- */

/* Members whose cursor is below the spool's oldest record lost what they
 * needed in between to the cap: counted, and their cursor moves up. */
static void fanout_note_capped(struct fanout *f)
{
    uint64_t oldest;

    if (spool_peek(f->spool, 0, &oldest) != 1)
        return;
    for (size_t i = 0; i < f->set.n; i++) {
        struct fanout_member *m = f->m[i];
        uint64_t acked = exporter_acked(m->e);

        if (acked + 1 >= oldest)
            continue;
        for (size_t k = 0; k < f->count && fanout_at(f, k)->seq < oldest; k++)
            if (fanout_at(f, k)->seq > acked && (fanout_at(f, k)->mask >> i & 1))
                m->behind_dropped++;
        exporter_advance(m->e, oldest - 1);
        m->last_acked = exporter_acked(m->e); /* no progress of the collector's */
    }
}

void fanout_sealed(struct fanout *f, uint64_t seq, const struct batcher_sealed *sealed,
                   uint64_t now_ns)
{
    struct fanout_entry *e;

    fanout_note_capped(f);
    if (f->count == f->cap && fanout_ring_grow(f) < 0)
        return; /* not in the ring: meant for every member */
    e = fanout_at(f, f->count);
    memset(e, 0, sizeof(*e));
    e->seq = seq;
    e->jobless = sealed->jobless;
    e->many = sealed->njobs > FANOUT_JOBS_INLINE;
    for (size_t k = 0; k < sealed->njobs; k++) {
        if (!e->many)
            e->job[e->njobs++] = (uint32_t)sealed->jobs[k];
        fanout_job_mask(f, (uint32_t)sealed->jobs[k], now_ns); /* seen now */
    }
    fanout_place_entry(f, e, now_ns);
    f->count++;
}

/* --- members ----------------------------------------------------------------- */

static struct fanout_member *fanout_member_new(struct fanout *f, const struct collector_member *who,
                                               uint64_t now_ns)
{
    struct fanout_member *m = calloc(1, sizeof(*m));
    struct exporter_options eo = {
        .collector = who->address,
        .keepalive_ns = f->o.keepalive_ns,
        .backoff_min_ns = f->o.backoff_min_ns,
        .backoff_max_ns = f->o.backoff_max_ns,
        .eager = f->o.eager,
        .on_capture = f->o.on_capture,
        .on_capture_ctx = f->o.on_capture_ctx,
        .tls = f->o.tls,
        .wants = fanout_member_wants,
        .wants_ctx = m,
        .on_reject = fanout_member_reject,
        .on_reject_ctx = m,
        .start = spool_acked_seq(f->spool), /* it catches up from what is spooled */
    };

    if (!m)
        return NULL;
    m->f = f;
    m->who = *who;
    m->progress_ns = now_ns;
    m->e = exporter_new(&eo, f->spool);
    if (!m->e) {
        free(m);
        return NULL;
    }
    return m;
}

/* The member of the old set with who's name and address, taken out of it. */
static struct fanout_member *fanout_take_old(struct fanout_member **old, size_t n,
                                             const struct collector_member *who)
{
    for (size_t i = 0; i < n; i++)
        if (old[i] && !strcmp(old[i]->who.name, who->name) &&
            !strcmp(old[i]->who.address, who->address)) {
            struct fanout_member *m = old[i];
            old[i] = NULL;
            return m;
        }
    return NULL;
}

int fanout_set_members(struct fanout *f, const struct collector_set *set, uint64_t now_ns)
{
    struct fanout_member *old[COLLECTOR_SET_MAX];
    size_t nold = f->set.n, n = 0;
    int err = 0;

    if (collector_set_equal(&f->set, set))
        return 0;
    memcpy(old, f->m, nold * sizeof(*old));
    for (size_t i = 0; i < set->n; i++) {
        struct fanout_member *m = fanout_take_old(old, nold, &set->member[i]);
        if (!m && !(m = fanout_member_new(f, &set->member[i], now_ns))) {
            err = -ENOMEM;
            continue;
        }
        m->index = n;
        f->set.member[n] = set->member[i];
        f->m[n++] = m;
    }
    f->set.n = n;
    for (size_t i = 0; i < nold; i++) /* removed: they no longer hold the watermark */
        fanout_member_free(old[i]);
    f->gen++;
    for (size_t k = 0; k < f->count; k++)
        fanout_place_entry(f, fanout_at(f, k), now_ns);
    names_reset(f->names); /* a job's new primary or standby has none of its names */
    return err;
}

size_t fanout_members(const struct fanout *f)
{
    return f->set.n;
}

uint32_t fanout_features(const struct fanout *f)
{
    uint32_t all = f->set.n ? UINT32_MAX : 0;

    for (size_t i = 0; i < f->set.n; i++)
        all &= f->m[i] && f->m[i]->e ? exporter_features(f->m[i]->e) : 0;
    return all;
}

int fanout_set_tls(struct fanout *f, const struct tls_pem *tls, uint64_t now_ns)
{
    struct tls_pem copy;

    if (fanout_tls_copy(&copy, tls) < 0) {
        tls_pem_free(&copy);
        return -ENOMEM;
    }
    tls_pem_free(&f->tls);
    f->tls = copy;
    f->o.tls = tls ? &f->tls : NULL;
    for (size_t i = 0; i < f->set.n; i++)
        if (exporter_set_tls(f->m[i]->e, f->o.tls, now_ns) < 0)
            return -ENOMEM;
    return 0;
}

/* --- polling ------------------------------------------------------------------- */

/* A member that waits for acks made progress, or is behind. */
static void fanout_member_track(struct fanout *f, struct fanout_member *m, uint64_t now_ns)
{
    uint64_t acked = exporter_acked(m->e);

    if (acked != m->last_acked || exporter_idle(m->e))
        m->progress_ns = now_ns;
    m->last_acked = acked;
    m->behind = now_ns - m->progress_ns > f->o.standby_wait_ns;
}

/* The spool's ack watermark (every member's cursor), the names' acks with
 * it, and the delivered watermark (the members that are not behind). */
static void fanout_watermarks(struct fanout *f)
{
    uint64_t low = UINT64_MAX, delivered = UINT64_MAX;

    if (!f->set.n)
        return;
    for (size_t i = 0; i < f->set.n; i++) {
        uint64_t acked = exporter_acked(f->m[i]->e);
        low = acked < low ? acked : low;
        if (!f->m[i]->behind && acked < delivered)
            delivered = acked;
    }
    if (low > spool_acked_seq(f->spool) && spool_ack(f->spool, low) != -ERANGE) {
        names_ack(f->names, low);
        fanout_ring_pop(f, low);
    }
    spool_set_delivered(f->spool, delivered == UINT64_MAX ? low : delivered);
}

/* Records member i needs after its cursor: from the ring, and the spooled
 * records the ring does not know (meant for every member). */
static uint64_t fanout_count_unacked(const struct fanout *f, size_t i)
{
    uint64_t acked = exporter_acked(f->m[i]->e), n;

    n = spool_count(f->spool, acked, f->count ? fanout_at(f, 0)->seq : UINT64_MAX);
    for (size_t k = 0; k < f->count; k++) {
        const struct fanout_entry *e = fanout_at(f, k);
        n += e->seq > acked && (e->mask >> i & 1) && fanout_wants(f, i, e->seq);
    }
    return n;
}

/* A collector said it does not hold kernel sets we referred to (its store
 * was lost): every set is defined again. */
static void fanout_sets_unknown(struct fanout *f, struct fanout_member *m)
{
    uint64_t unknown = exporter_sets_unknown(m->e);

    if (unknown == m->sets_unknown)
        return;
    m->sets_unknown = unknown;
    ksets_reset(names_ksets(f->names));
    log_ratelimited(&f->rl, LOG_LEVEL_WARN, "fanout",
                    "collector %s does not hold kernel sets this agent referred to (its store "
                    "was lost?): those records went without kernels; defining every set again",
                    m->who.name);
}

void fanout_poll(struct fanout *f, uint64_t now_ns)
{
    for (size_t i = 0; i < f->set.n; i++) {
        exporter_poll(f->m[i]->e, now_ns);
        fanout_member_track(f, f->m[i], now_ns);
        fanout_sets_unknown(f, f->m[i]);
    }
    fanout_watermarks(f);
    if (now_ns >= f->refresh_ns) {
        for (size_t i = 0; i < f->set.n; i++)
            f->m[i]->unacked = fanout_count_unacked(f, i);
        f->refresh_ns = now_ns + FANOUT_REFRESH_NS;
    }
}

uint64_t fanout_next_ns(const struct fanout *f, uint64_t now_ns)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < f->set.n; i++) {
        uint64_t t = exporter_next_ns(f->m[i]->e, now_ns);
        next = t < next ? t : next;
    }
    return next;
}

bool fanout_idle(const struct fanout *f, uint64_t now_ns)
{
    for (size_t i = 0; i < f->set.n; i++) {
        const struct fanout_member *m = f->m[i];
        if (!exporter_idle(m->e) && now_ns - m->progress_ns <= f->o.standby_wait_ns)
            return false;
    }
    return true;
}

/* --- stats ----------------------------------------------------------------------- */

void fanout_member_stats(const struct fanout *f, size_t i, struct fanout_member_stats *out)
{
    const struct fanout_member *m = f->m[i];

    memset(out, 0, sizeof(*out));
    out->name = m->who.name;
    exporter_get_stats(m->e, &out->exporter);
    out->connected = out->exporter.connected;
    out->behind = m->behind;
    out->unacked = m->unacked;
    out->acked = exporter_acked(m->e);
    out->behind_dropped = m->behind_dropped;
}

void fanout_get_stats(const struct fanout *f, struct exporter_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->connected = f->set.n > 0;
    for (size_t i = 0; i < f->set.n; i++) {
        struct exporter_stats s;

        exporter_get_stats(f->m[i]->e, &s);
        out->connected &= s.connected;
        out->sent += s.sent;
        out->reconnects += s.reconnects;
        out->rejected += s.rejected;
        out->resent += s.resent;
        if (s.last_ack_ns > out->last_ack_ns)
            out->last_ack_ns = s.last_ack_ns;
        if (s.last_error[0])
            memcpy(out->last_error, s.last_error, sizeof(out->last_error));
    }
    out->acked = spool_acked_seq(f->spool);
}
