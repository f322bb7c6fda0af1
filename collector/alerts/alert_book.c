#include "collector/alerts/alert_book.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/causes.h"
#include "common/name_id.h"

#define ALERT_RATE_SLOTS 256 /* start times kept per job for the rate limit */

struct alert_job {
    char *job;
    uint64_t steps_closed;
    uint64_t active_ns;               /* last report or closed step */
    uint64_t fired[ALERT_RATE_SLOTS]; /* firing start times, a ring */
    uint32_t n_fired, next_fired;
};

struct alert_book {
    struct alert_book_options o;
    alert_change_fn fn;
    void *ctx;
    struct alert **alerts; /* oldest first */
    size_t n, cap;
    struct alert_job **jobs;
    size_t n_jobs, cap_jobs;
    uint64_t rate_limited;
};

struct alert_book *alert_book_new(const struct alert_book_options *o, alert_change_fn fn, void *ctx)
{
    struct alert_book *b = calloc(1, sizeof(*b));

    if (!b)
        return NULL;
    b->o = *o;
    if (!b->o.clear_steps)
        b->o.clear_steps = 60;
    if (!b->o.keep_resolved_ns)
        b->o.keep_resolved_ns = 86400ull * 1000000000ull;
    b->fn = fn;
    b->ctx = ctx;
    return b;
}

static void alert_free(struct alert *a)
{
    if (a)
        free(a->job);
    free(a);
}

void alert_book_free(struct alert_book *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        alert_free(b->alerts[i]);
    for (size_t i = 0; i < b->n_jobs; i++) {
        free(b->jobs[i]->job);
        free(b->jobs[i]);
    }
    free(b->alerts);
    free(b->jobs);
    free(b);
}

const char *alert_status_name(enum alert_status s)
{
    return s == ALERT_FIRING ? "firing" : s == ALERT_RESOLVED ? "resolved" : "pending";
}

/* The job's entry, made when new (active at now). NULL on ENOMEM. */
static struct alert_job *alert_book_job(struct alert_book *b, const char *job, uint64_t now)
{
    struct alert_job *j;

    for (size_t i = 0; i < b->n_jobs; i++)
        if (strcmp(b->jobs[i]->job, job) == 0)
            return b->jobs[i];
    if (b->n_jobs == b->cap_jobs) {
        size_t cap = b->cap_jobs ? b->cap_jobs * 2 : 8;
        struct alert_job **grown = realloc(b->jobs, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        b->jobs = grown;
        b->cap_jobs = cap;
    }
    j = calloc(1, sizeof(*j));
    if (j)
        j->job = strdup(job);
    if (!j || !j->job) {
        free(j);
        return NULL;
    }
    j->active_ns = now;
    b->jobs[b->n_jobs++] = j;
    return j;
}

/* The open (pending or firing) alert of (job, subject, cause), or NULL. */
static struct alert *alert_book_find(struct alert_book *b, const char *job, const char *subject,
                                     int cause)
{
    for (size_t i = b->n; i-- > 0;) {
        struct alert *a = b->alerts[i];
        if (a->status != ALERT_RESOLVED && a->cause == cause && strcmp(a->job, job) == 0 &&
            strcmp(a->subject, subject) == 0)
            return a;
    }
    return NULL;
}

static bool alert_has_rank(const struct alert *a, uint32_t rank)
{
    for (uint32_t i = 0; i < a->n_ranks; i++)
        if (a->ranks[i] == rank)
            return true;
    return false;
}

/* Where a suspect's alert goes (alert_book.h): its peer group (a cause
 * grouped by peers: a link), its node when the evidence is node-wide (a
 * node-level finding; wide: another rank of its node is a suspect of the
 * cause in the same report; or the rank is one of an open node alert's),
 * else its rank. */
static void alert_subject(struct alert_book *b, const char *job, const Argus__V1__Suspect *s,
                          bool wide, char *out, size_t len)
{
    bool has_node = s->node && *s->node;

    if (causes_get(s->cause)->grouping == CAUSES_GROUP_JOB) {
        snprintf(out, len, "job");
        return;
    }
    if (causes_get(s->cause)->grouping == CAUSES_GROUP_PEERS && s->group && *s->group &&
        strcmp(s->group, "job") != 0) {
        snprintf(out, len, "group:%s", s->group);
        return;
    }
    snprintf(out, len, "node:%s", has_node ? s->node : "");
    if (has_node && (s->rank == UINT32_MAX || wide))
        return;
    const struct alert *a = has_node ? alert_book_find(b, job, out, s->cause) : NULL;
    if (!a || !alert_has_rank(a, s->rank))
        snprintf(out, len, "rank:%" PRIu32, s->rank);
}

struct alert_pos {
    const Argus__V1__Suspect *s;
    size_t i; /* its index in the report */
};

static const char *alert_node_of(const Argus__V1__Suspect *s)
{
    return s->node ? s->node : "";
}

/* Suspect order for alert_book_wide: cause, node, rank. */
static int alert_pos_cmp(const void *x, const void *y)
{
    const Argus__V1__Suspect *a = ((const struct alert_pos *)x)->s;
    const Argus__V1__Suspect *b = ((const struct alert_pos *)y)->s;
    int c = (a->cause > b->cause) - (a->cause < b->cause);

    c = c ? c : strcmp(alert_node_of(a), alert_node_of(b));
    return c ? c : (a->rank > b->rank) - (a->rank < b->rank);
}

/* For each suspect of r, whether another rank of its node is a suspect of
 * the same cause in r: wide[i] (calloc'ed, the caller frees; NULL when r
 * has no suspects). O(n log n). 0 or -ENOMEM. */
static int alert_book_wide(const Argus__V1__Report *r, bool **wide)
{
    size_t n = r->n_suspects;
    struct alert_pos *v = n ? malloc(n * sizeof(*v)) : NULL;

    *wide = n ? calloc(n, sizeof(**wide)) : NULL;
    if (n && (!v || !*wide)) {
        free(v);
        free(*wide);
        *wide = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (struct alert_pos){r->suspects[i], i};
    qsort(v, n, sizeof(*v), alert_pos_cmp);
    for (size_t i = 0, j; i < n; i = j) { /* runs of one (cause, node), ranks sorted */
        const Argus__V1__Suspect *first = v[i].s;
        uint32_t hi = first->rank; /* the highest rank of the run (UINT32_MAX: none) */
        for (j = i + 1; j < n && v[j].s->cause == first->cause &&
                        strcmp(alert_node_of(v[j].s), alert_node_of(first)) == 0;
             j++)
            hi = v[j].s->rank != UINT32_MAX ? v[j].s->rank : hi;
        bool several = *alert_node_of(first) && first->rank != UINT32_MAX && hi != first->rank;
        for (size_t k = i; several && k < j; k++)
            (*wide)[v[k].i] = v[k].s->rank != UINT32_MAX;
    }
    free(v);
    return 0;
}

/* Append a (taken). 0 or -ENOMEM (a freed). */
static int alert_book_add(struct alert_book *b, struct alert *a)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        struct alert **grown = realloc(b->alerts, cap * sizeof(*grown));
        if (!grown) {
            alert_free(a);
            return -ENOMEM;
        }
        b->alerts = grown;
        b->cap = cap;
    }
    b->alerts[b->n++] = a;
    return 0;
}

/* When report r says its finding began: its onset from the records, the
 * same on both collectors of an HA pair (an alert's id and its startsAt come
 * from it), else (no record said) now. */
static uint64_t alert_report_time(const Argus__V1__Report *r, uint64_t now)
{
    return r && r->onset_unix_ns ? r->onset_unix_ns : now;
}

/* A new pending alert of (job, subject, cause) first reported at now (the
 * report's onset), added. NULL on ENOMEM. */
static struct alert *alert_book_open(struct alert_book *b, const char *job, const char *subject,
                                     int cause, uint64_t now)
{
    struct alert *a = calloc(1, sizeof(*a));
    uint64_t h;

    if (!a || !(a->job = strdup(job))) {
        free(a);
        return NULL;
    }
    snprintf(a->subject, sizeof(a->subject), "%s", subject);
    a->cause = cause;
    a->created_ns = now;
    a->gpu = -1;
    h = name_id(job);
    h = name_id_update(h, "|", 1);
    h = name_id_update(h, subject, strlen(subject));
    h = name_id_update(h, &cause, sizeof(cause));
    snprintf(a->id, sizeof(a->id), "%016" PRIx64 "-%" PRIx64, h, now);
    return alert_book_add(b, a) == 0 ? a : NULL;
}

static void alert_add_rank(struct alert *a, uint32_t rank, uint64_t clean)
{
    if (rank == UINT32_MAX) /* a node finding: no rank of its own */
        return;
    for (uint32_t i = 0; i < a->n_ranks; i++)
        if (a->ranks[i] == rank) {
            a->rank_clean[i] = a->rank_clean[i] < clean ? a->rank_clean[i] : clean;
            return;
        }
    if (a->n_ranks < ALERT_MAX_RANKS) {
        uint32_t i = a->n_ranks++;
        for (; i > 0 && a->ranks[i - 1] > rank; i--) {
            a->ranks[i] = a->ranks[i - 1];
            a->rank_clean[i] = a->rank_clean[i - 1];
        }
        a->ranks[i] = rank;
        a->rank_clean[i] = clean;
    } else {
        a->more_ranks++;
    }
}

/* Ranks of a not named for clear_steps closed steps leave its list: they
 * recovered (the alert itself resolves when all have). */
static void alert_drop_recovered(struct alert *a, uint64_t clear_steps)
{
    uint32_t kept = 0;

    for (uint32_t i = 0; i < a->n_ranks; i++) {
        if (a->rank_clean[i] >= clear_steps && a->n_ranks > 1 && kept + (a->n_ranks - i) > 1)
            continue;
        a->ranks[kept] = a->ranks[i];
        a->rank_clean[kept++] = a->rank_clean[i];
    }
    a->n_ranks = kept;
}

/* Add what suspect s of report r cost to a's GPU-hours lost. */
static void alert_cost(struct alert *a, const Argus__V1__Report *r, const Argus__V1__Suspect *s)
{
    const char *id = r->id ? r->id : "";
    uint32_t i = 0;

    if (strcmp(a->cost_report, id) != 0) { /* a new report: the last one's shares stand */
        a->gpu_hours_before = a->gpu_hours_lost;
        a->n_cost = 0;
        snprintf(a->cost_report, sizeof(a->cost_report), "%s", id);
    }
    while (i < a->n_cost && a->cost_ranks[i] != s->rank)
        i++;
    if (i == ALERT_MAX_RANKS)
        return; /* over the ranks listed: counted in more_ranks, not costed */
    if (i == a->n_cost)
        a->cost_ranks[a->n_cost++] = s->rank;
    a->cost_hours[i] = s->gpu_hours_lost;
    a->gpu_hours_lost = a->gpu_hours_before;
    for (i = 0; i < a->n_cost; i++)
        a->gpu_hours_lost += a->cost_hours[i];
}

/* Take the suspect's details into a. */
static void alert_update(struct alert *a, const Argus__V1__Report *r, const Argus__V1__Suspect *s,
                         uint64_t now)
{
    bool first = a->n_ranks == 0;

    alert_add_rank(a, s->rank, 0);
    a->level = s->level;
    a->gpu = first || a->n_ranks <= 1 ? s->gpu : -1;
    snprintf(a->node, sizeof(a->node), "%s", s->node ? s->node : "");
    snprintf(a->group, sizeof(a->group), "%s", s->group ? s->group : "");
    snprintf(a->where, sizeof(a->where), "%s", s->where ? s->where : "");
    snprintf(a->evidence, sizeof(a->evidence), "%s", s->evidence ? s->evidence : "");
    snprintf(a->summary, sizeof(a->summary), "%s", r->summary ? r->summary : "");
    snprintf(a->report_id, sizeof(a->report_id), "%s", r->id ? r->id : "");
    alert_cost(a, r, s);
    if (s->score > a->score || first)
        a->score = s->score;
    a->updated_ns = now;
    a->clean_steps = 0;
}

/* May job start one more firing alert at now? Takes the slot when so. */
static bool alert_rate_take(struct alert_book *b, struct alert_job *j, uint64_t now)
{
    uint32_t inside = 0;

    if (!b->o.rate_limit)
        return true;
    for (uint32_t i = 0; i < j->n_fired; i++)
        if (j->fired[i] + b->o.rate_window_ns > now)
            inside++;
    if (inside >= b->o.rate_limit || inside >= ALERT_RATE_SLOTS) {
        b->rate_limited++;
        return false;
    }
    j->fired[j->next_fired] = now;
    j->next_fired = (j->next_fired + 1) % ALERT_RATE_SLOTS;
    if (j->n_fired < ALERT_RATE_SLOTS)
        j->n_fired++;
    return true;
}

/* The labels Alertmanager identifies a firing alert by: fixed from now on. */
static void alert_freeze_labels(struct alert *a)
{
    size_t off = 0;

    a->fired_ranks[0] = '\0';
    for (uint32_t i = 0; i < a->n_ranks && off < sizeof(a->fired_ranks); i++)
        off += (size_t)snprintf(a->fired_ranks + off, sizeof(a->fired_ranks) - off, "%s%" PRIu32,
                                i ? "," : "", a->ranks[i]);
    a->fired_gpu = a->gpu;
    a->fired_level = a->level;
}

static void alert_notify(struct alert_book *b, struct alert *a, const Argus__V1__Report *r)
{
    a->report = r;
    if (b->fn)
        b->fn(b->ctx, a, false);
    a->report = NULL;
}

static void alert_resolve(struct alert_book *b, struct alert *a, uint64_t now);

/* A node alert takes in the open rank alert of one of its ranks (same job
 * and cause): its ranks join, it resolves (superseded). */
static void alert_book_absorb(struct alert_book *b, struct alert *node, uint32_t rank, uint64_t now)
{
    char subject[32];

    if (rank == UINT32_MAX)
        return;
    snprintf(subject, sizeof(subject), "rank:%" PRIu32, rank);
    struct alert *a = alert_book_find(b, node->job, subject, node->cause);
    if (!a)
        return;
    for (uint32_t i = 0; i < a->n_ranks; i++)
        alert_add_rank(node, a->ranks[i], a->rank_clean[i]);
    alert_resolve(b, a, now);
}

/* One suspect of report r of job j (wide: node-wide evidence,
 * alert_book_wide): its alert made or updated, marked to fire when the
 * suspect pages. 0 or -ENOMEM. */
static int alert_book_suspect(struct alert_book *b, struct alert_job *j, const Argus__V1__Report *r,
                              const Argus__V1__Suspect *s, bool wide, uint64_t now)
{
    char subject[160];
    struct alert *a;

    /* An L1 spike of a step or a few never pages: no pending alert either
     * (on-call's list is not a log of findings). */
    if (!causes_pages(s->cause) || (s->level == ARGUS__V1__LEVEL__LEVEL_L1_ITERATION && !s->pages))
        return 0;
    alert_subject(b, j->job, s, wide, subject, sizeof(subject));
    a = alert_book_find(b, j->job, subject, s->cause);
    if (!a) {
        a = alert_book_open(b, j->job, subject, s->cause, alert_report_time(r, now));
        if (!a)
            return -ENOMEM;
        alert_update(a, r, s, now);
        alert_notify(b, a, r);
    } else {
        alert_update(a, r, s, now);
    }
    if (strncmp(subject, "node:", 5) == 0)
        alert_book_absorb(b, a, s->rank, now);
    a->pages_now |= s->pages;
    return 0;
}

/* The suspects of report r. 0 or -ENOMEM. */
static int alert_book_report(struct alert_book *b, struct alert_job *j, const Argus__V1__Report *r,
                             uint64_t now)
{
    bool *wide;
    int rc = alert_book_wide(r, &wide);

    for (size_t k = 0; k < r->n_suspects && rc == 0; k++)
        rc = alert_book_suspect(b, j, r, r->suspects[k], wide[k], now);
    free(wide);
    return rc;
}

/* Fire the alerts of report r's suspects that page (all its ranks in). */
static void alert_book_fire(struct alert_book *b, struct alert_job *j, const Argus__V1__Report *r,
                            uint64_t now)
{
    for (size_t i = 0; i < b->n; i++) {
        struct alert *a = b->alerts[i];
        if (!a->pages_now)
            continue;
        a->pages_now = false;
        if (a->status == ALERT_PENDING && alert_rate_take(b, j, now)) {
            a->status = ALERT_FIRING;
            a->fired = true;
            a->firing_ns = alert_report_time(r, now);
            alert_freeze_labels(a);
            alert_notify(b, a, r);
        }
    }
}

static void alert_resolve(struct alert_book *b, struct alert *a, uint64_t now)
{
    a->status = ALERT_RESOLVED;
    a->resolved_ns = now;
    a->updated_ns = now;
    alert_notify(b, a, NULL);
}

int alert_book_observe(struct alert_book *b, const char *job, Argus__V1__Report *const *reports,
                       size_t n, uint64_t steps_closed, uint64_t now_ns)
{
    struct alert_job *j = alert_book_job(b, job, now_ns);
    uint64_t delta;
    int rc = 0;

    if (!j)
        return -ENOMEM;
    delta = steps_closed >= j->steps_closed ? steps_closed - j->steps_closed : steps_closed;
    j->steps_closed = steps_closed;
    if (delta || n)
        j->active_ns = now_ns;
    for (size_t i = 0; i < b->n; i++) { /* named below: back to 0 */
        struct alert *a = b->alerts[i];
        if (a->status == ALERT_RESOLVED || strcmp(a->job, job) != 0)
            continue;
        a->clean_steps += delta;
        for (uint32_t k = 0; k < a->n_ranks; k++)
            a->rank_clean[k] += delta;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = alert_book_report(b, j, reports[i], now_ns);
        alert_book_fire(b, j, reports[i], now_ns);
    }
    for (size_t i = 0; i < b->n; i++) {
        struct alert *a = b->alerts[i];
        if (a->status == ALERT_RESOLVED || strcmp(a->job, job) != 0)
            continue;
        if (a->clean_steps >= b->o.clear_steps)
            alert_resolve(b, a, now_ns);
        else
            alert_drop_recovered(a, b->o.clear_steps);
    }
    return rc;
}

int alert_book_resolve(struct alert_book *b, const char *job, int cause, int keep, uint64_t now_ns)
{
    int n = 0;

    for (size_t k = 0; k < b->n; k++) {
        struct alert *a = b->alerts[k];
        if (a->status != ALERT_RESOLVED && (cause < 0 || a->cause == cause) && a->cause != keep &&
            strcmp(a->job, job) == 0) {
            alert_resolve(b, a, now_ns);
            n++;
        }
    }
    return n;
}

/* Take rank out of a's list, unless it is the last one (a resolved alert
 * keeps what it was about); false when it is not there. */
static bool alert_remove_rank(struct alert *a, uint32_t rank)
{
    uint32_t i = 0;

    while (i < a->n_ranks && a->ranks[i] != rank)
        i++;
    if (i == a->n_ranks)
        return false;
    if (a->n_ranks == 1)
        return true;
    for (a->n_ranks--; i < a->n_ranks; i++) {
        a->ranks[i] = a->ranks[i + 1];
        a->rank_clean[i] = a->rank_clean[i + 1];
    }
    return true;
}

int alert_book_recovered(struct alert_book *b, const char *job, uint32_t rank, uint32_t causes,
                         uint64_t now_ns)
{
    int n = 0;

    for (size_t k = 0; k < b->n; k++) {
        struct alert *a = b->alerts[k];
        if (a->status == ALERT_RESOLVED || a->cause < 0 || a->cause >= 32 ||
            !(causes & (1u << a->cause)) || strcmp(a->job, job) != 0)
            continue;
        bool last = a->n_ranks == 1 && a->more_ranks == 0;
        if (alert_remove_rank(a, rank) && last) {
            alert_resolve(b, a, now_ns);
            n++;
        }
    }
    return n;
}

/* Resolve every open alert of job i and drop the job's entry. */
static void alert_book_end_job(struct alert_book *b, size_t i, uint64_t now)
{
    struct alert_job *j = b->jobs[i];

    for (size_t k = 0; k < b->n; k++)
        if (b->alerts[k]->status != ALERT_RESOLVED && strcmp(b->alerts[k]->job, j->job) == 0)
            alert_resolve(b, b->alerts[k], now);
    free(j->job);
    free(j);
    b->jobs[i] = b->jobs[--b->n_jobs];
}

void alert_book_sweep(struct alert_book *b, uint64_t now_ns)
{
    size_t kept = 0;

    for (size_t i = 0; i < b->n_jobs;) {
        if (b->o.job_idle_ns && b->jobs[i]->active_ns + b->o.job_idle_ns < now_ns)
            alert_book_end_job(b, i, now_ns);
        else
            i++;
    }
    for (size_t i = 0; i < b->n; i++) {
        struct alert *a = b->alerts[i];
        if (a->status == ALERT_RESOLVED && a->resolved_ns + b->o.keep_resolved_ns < now_ns) {
            if (b->fn)
                b->fn(b->ctx, a, true);
            alert_free(a);
        } else {
            b->alerts[kept++] = a;
        }
    }
    b->n = kept;
}

int alert_book_restore(struct alert_book *b, const struct alert *a, uint64_t now_ns)
{
    struct alert *copy = malloc(sizeof(*copy));

    if (!copy)
        return -ENOMEM;
    *copy = *a;
    copy->report = NULL;
    copy->job = strdup(a->job);
    if (!copy->job || (a->status != ALERT_RESOLVED && !alert_book_job(b, a->job, now_ns))) {
        alert_free(copy);
        return -ENOMEM;
    }
    return alert_book_add(b, copy);
}

void alert_book_foreach(struct alert_book *b, alert_change_fn fn, void *ctx)
{
    for (size_t i = 0; i < b->n; i++)
        fn(ctx, b->alerts[i], false);
}

uint64_t alert_book_rate_limited(const struct alert_book *b)
{
    return b->rate_limited;
}
