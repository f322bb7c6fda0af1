/* Report building: see diag_report.h. */
#include "collector/diag/diag_report.h"

#include "common/causes.h"
#include "common/mix.h"
#include "common/name_id.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

void diag_suspect_free(Argus__V1__Suspect *s)
{
    if (!s)
        return;
    free(s->node);
    free(s->group);
    free(s->where);
    free(s->evidence);
    free(s);
}

Argus__V1__Suspect *diag_suspect_new(uint32_t rank, const char *node, int32_t gpu,
                                     const char *group, Argus__V1__Level level,
                                     Argus__V1__Cause cause, const char *where, double score,
                                     uint32_t persisted, uint32_t window, const char *evidence)
{
    Argus__V1__Suspect *s = malloc(sizeof(*s));

    if (!s)
        return NULL;
    argus__v1__suspect__init(s);
    s->rank = rank;
    s->gpu = gpu;
    s->level = level;
    s->cause = cause;
    s->score = score;
    s->persisted = persisted;
    s->window = window;
    s->node = dup_or_empty(node);
    s->group = dup_or_empty(group);
    s->where = dup_or_empty(where);
    s->evidence = dup_or_empty(evidence);
    if (!s->node || !s->group || !s->where || !s->evidence) {
        diag_suspect_free(s);
        return NULL;
    }
    return s;
}

Argus__V1__Report *diag_report_new(const char *job, uint64_t created_unix_ns, uint64_t seq)
{
    Argus__V1__Report *r = malloc(sizeof(*r));
    char id[48];

    if (!r)
        return NULL;
    argus__v1__report__init(r);
    /* Sortable by time; the job hash keeps ids of jobs created in the same
     * nanosecond apart. */
    snprintf(id, sizeof(id), "%020" PRIu64 "-%08" PRIx32 "-%06" PRIu64, created_unix_ns,
             (uint32_t)name_id(job ? job : ""), seq % 1000000);
    r->created_unix_ns = created_unix_ns;
    r->id = strdup(id);
    r->job = dup_or_empty(job);
    r->summary = strdup("");
    if (!r->id || !r->job || !r->summary) {
        diag_report_free(r);
        return NULL;
    }
    return r;
}

/* FNV-1a of v as 8 little-endian bytes (the same hash on every host). */
static uint64_t report_hash_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return name_id_update(h, b, sizeof(b));
}

static uint64_t report_hash_str(uint64_t h, const char *s)
{
    s = s ? s : "";
    return name_id_update(h, s, strlen(s) + 1); /* with its NUL: "ab","c" is not "a","bc" */
}

/* What a suspect points at: its rank, node, group, cause and level (an L1
 * spike and a persisted L2 finding of one rank are two findings). */
static uint64_t report_suspect_hash(const Argus__V1__Suspect *s)
{
    uint64_t h = report_hash_u64(NAME_ID_BASIS, s->rank);

    h = report_hash_str(h, s->node);
    h = report_hash_str(h, s->group);
    h = report_hash_u64(h, (uint64_t)s->cause);
    h = report_hash_u64(h, (uint64_t)s->level);
    /* splitmix64's finalizer: FNV's last bytes change h almost linearly, and
     * a sum of such hashes could cancel (two suspects' levels changed, the
     * same sum) */
    return mix64(h);
}

int diag_report_identify(Argus__V1__Report *r, uint64_t onset_unix_ns)
{
    uint64_t h = report_hash_u64(report_hash_str(NAME_ID_BASIS, r->job), r->to_step), sum = 0;
    char id[48], *t;

    /* A sum of the suspects' hashes: the engine's suspect order is not part
     * of what was found. */
    for (size_t i = 0; i < r->n_suspects; i++)
        sum += report_suspect_hash(r->suspects[i]);
    h = report_hash_u64(h, sum);
    snprintf(id, sizeof(id), "%020" PRIu64 "-%08" PRIx32 "-%012" PRIx64, onset_unix_ns,
             (uint32_t)name_id(r->job ? r->job : ""), (uint64_t)(h & 0xffffffffffffULL));
    t = strdup(id);
    if (!t)
        return -ENOMEM;
    free(r->id);
    r->id = t;
    r->onset_unix_ns = onset_unix_ns;
    return 0;
}

int diag_report_add(Argus__V1__Report *r, Argus__V1__Suspect *s)
{
    Argus__V1__Suspect **tmp = realloc(r->suspects, (r->n_suspects + 1) * sizeof(*tmp));

    if (!tmp) {
        diag_suspect_free(s);
        return -ENOMEM;
    }
    r->suspects = tmp;
    r->suspects[r->n_suspects++] = s;
    return 0;
}

int diag_report_summarize(Argus__V1__Report *r)
{
    char buf[512];
    size_t off = 0;

    if (r->summary && r->summary[0])
        return 0; /* a liveness report's own sentence (diag_live.h) */
    off +=
        (size_t)snprintf(buf, sizeof(buf), "steps %" PRIu64 "-%" PRIu64 ": %zu %s%s%s",
                         r->from_step, r->to_step, r->n_suspects, r->pages ? "suspect" : "finding",
                         r->n_suspects == 1 ? "" : "s", r->pages ? "" : " (pages nobody)");
    for (size_t i = 0; i < r->n_suspects && i < 4 && off < sizeof(buf); i++) {
        const Argus__V1__Suspect *s = r->suspects[i];
        if (s->rank == DIAG_RANK_NONE)
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s job %s (%s)", i ? "," : ":",
                                    causes_get(s->cause)->word, s->where);
        else
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s rank %u %s (%s)",
                                    i ? "," : ":", s->rank, causes_get(s->cause)->word, s->where);
    }
    if (r->n_suspects > 4 && off < sizeof(buf))
        snprintf(buf + off, sizeof(buf) - off, ", ...");
    char *t = strdup(buf);
    if (!t)
        return -ENOMEM;
    free(r->summary);
    r->summary = t;
    return 0;
}

void diag_report_free(Argus__V1__Report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_suspects; i++)
        diag_suspect_free(r->suspects[i]);
    free(r->suspects);
    free(r->id);
    free(r->job);
    free(r->summary);
    free(r);
}

const char *diag_fmt_ns(char *buf, size_t len, double ns)
{
    double ms = ns / 1e6;

    if (ms >= 10) {
        uint64_t v = (uint64_t)llround(ms);
        if (v >= 1000000)
            snprintf(buf, len, "%" PRIu64 ",%03" PRIu64 ",%03" PRIu64 " ms", v / 1000000,
                     v / 1000 % 1000, v % 1000);
        else if (v >= 1000)
            snprintf(buf, len, "%" PRIu64 ",%03" PRIu64 " ms", v / 1000, v % 1000);
        else
            snprintf(buf, len, "%" PRIu64 " ms", v);
    } else if (ms >= 1) {
        snprintf(buf, len, "%.1f ms", ms);
    } else {
        snprintf(buf, len, "%.0f us", ns / 1e3);
    }
    return buf;
}

int diag_suspect_pages(const Argus__V1__Suspect *s)
{
    if (causes_get(s->cause)->grouping == CAUSES_GROUP_JOB)
        return causes_pages(s->cause); /* the job as a whole: argus's own blindness */
    if (s->rank == DIAG_RANK_NONE || s->level == ARGUS__V1__LEVEL__LEVEL_L1_ITERATION)
        return 0;
    return causes_pages(s->cause);
}

void diag_report_mark_pages(Argus__V1__Report *r)
{
    r->pages = false;
    for (size_t i = 0; i < r->n_suspects; i++) {
        r->suspects[i]->pages = diag_suspect_pages(r->suspects[i]) != 0;
        r->pages = r->pages || r->suspects[i]->pages;
    }
}

/* Queue r; over q->max the oldest goes (counted), so a caller that never
 * takes them cannot grow us. */
static int report_queue_push(struct diag_report_queue *q, Argus__V1__Report *r)
{
    if (q->n >= q->max) {
        diag_report_free(q->reports[0]);
        memmove(q->reports, q->reports + 1, (q->n - 1) * sizeof(*q->reports));
        q->n--;
        q->dropped++;
    }
    Argus__V1__Report **tmp = realloc(q->reports, (q->n + 1) * sizeof(*tmp));

    if (!tmp) {
        diag_report_free(r);
        return -ENOMEM;
    }
    q->reports = tmp;
    q->reports[q->n++] = r;
    q->queued++;
    return 0;
}

Argus__V1__Report *diag_report_queue_new(const struct diag_report_queue *q, const char *job,
                                         uint64_t created_unix_ns)
{
    return diag_report_new(job, created_unix_ns, q->seq + 1);
}

int diag_report_queue_finish(struct diag_report_queue *q, Argus__V1__Report *rep, uint64_t to_step,
                             uint32_t window, uint64_t onset_unix_ns)
{
    if (!rep->n_suspects) {
        diag_report_free(rep);
        return 0;
    }
    rep->from_step = to_step + 1 > window ? to_step + 1 - window : 0;
    rep->to_step = to_step;
    diag_report_mark_pages(rep);
    int err = diag_report_summarize(rep);
    err = err ? err : diag_report_identify(rep, onset_unix_ns);
    q->seq++;
    return err ? (diag_report_free(rep), err) : report_queue_push(q, rep);
}

size_t diag_report_queue_take(struct diag_report_queue *q, Argus__V1__Report ***out)
{
    size_t n = q->n;

    *out = q->reports;
    q->reports = NULL;
    q->n = 0;
    return n;
}

void diag_report_queue_free(struct diag_report_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        diag_report_free(q->reports[i]);
    free(q->reports);
    q->reports = NULL;
    q->n = 0;
}
