/* argusctl collectors: see collectors.h. */
#include "tools/argusctl/collectors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/target.h"

static int collectors_job_cmp(const void *x, const void *y)
{
    return strcmp(((const struct collectors_job *)x)->job, ((const struct collectors_job *)y)->job);
}

/* Every job of every answer, once, with the members that hold it. */
static long collectors_gather(const struct collector_set *s, ProtobufCMessage *const *answers,
                              struct collectors_job **out)
{
    size_t total = 0, n = 0;
    struct collectors_job *rows;

    for (size_t i = 0; i < s->n; i++)
        total += answers[i] ? ((const Argus__V1__JobsResponse *)answers[i])->n_jobs : 0;
    rows = calloc(total ? total : 1, sizeof(*rows));
    if (!rows)
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const Argus__V1__JobsResponse *r = (const Argus__V1__JobsResponse *)answers[i];
        for (size_t k = 0; r && k < r->n_jobs; k++)
            rows[n++] = (struct collectors_job){.job = r->jobs[k]->job, .held = 1ULL << i};
    }
    qsort(rows, n, sizeof(*rows), collectors_job_cmp);
    total = n, n = 0;
    for (size_t k = 0; k < total; k++) {
        if (n && strcmp(rows[n - 1].job, rows[k].job) == 0)
            rows[n - 1].held |= rows[k].held;
        else
            rows[n++] = rows[k];
    }
    *out = rows;
    return (long)n;
}

long collectors_table(const struct collector_set *s, ProtobufCMessage *const *answers,
                      struct collectors_job **out)
{
    long n = collectors_gather(s, answers, out);

    for (long k = 0; k < n; k++) {
        struct collectors_job *j = &(*out)[k];
        size_t at[2];
        size_t placed = collector_set_place(s, j->job, at);
        j->primary = at[0];
        j->standby = placed > 1 ? at[1] : COLLECTORS_NONE;
        j->moved = answers[j->primary] && !(j->held & (1ULL << j->primary));
        j->standby_moved = j->standby != COLLECTORS_NONE && answers[j->standby] &&
                           !(j->held & (1ULL << j->standby));
    }
    return n;
}

/* How many of the rows member m is primary (role 0) or standby (1) of. */
static size_t collectors_count(const struct collectors_job *rows, long n, size_t m, int role)
{
    size_t c = 0;

    for (long k = 0; k < n; k++)
        c += (role == 0 ? rows[k].primary : rows[k].standby) == m;
    return c;
}

static size_t collectors_moved(const struct collectors_job *rows, long n, bool standby)
{
    size_t c = 0;

    for (long k = 0; k < n; k++)
        c += standby ? rows[k].standby_moved : rows[k].moved;
    return c;
}

static json_object *collectors_member_json(const struct collector_set *s, size_t m)
{
    json_object *o;

    if (m == COLLECTORS_NONE)
        return NULL;
    o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(s->member[m].name));
    json_object_object_add(o, "address", json_object_new_string(s->member[m].address));
    return o;
}

static void collectors_put_json(FILE *f, json_object *o)
{
    fprintf(f, "%s\n",
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* --job J: its primary and standby. */
static int collectors_place_job(const struct collector_set *s, const struct collectors_options *o,
                                FILE *f)
{
    size_t at[2];
    size_t n = collector_set_place(s, o->job, at);
    json_object *j;

    if (!o->json) {
        fprintf(f, "job %s: primary %s (%s), standby %s (%s)\n", o->job, s->member[at[0]].name,
                s->member[at[0]].address, n > 1 ? s->member[at[1]].name : "none",
                n > 1 ? s->member[at[1]].address : "a set of one");
        return CTL_OK;
    }
    j = json_object_new_object();
    json_object_object_add(j, "job", json_object_new_string(o->job));
    json_object_object_add(j, "primary", collectors_member_json(s, at[0]));
    json_object_object_add(j, "standby",
                           collectors_member_json(s, n > 1 ? at[1] : COLLECTORS_NONE));
    collectors_put_json(f, j);
    return CTL_OK;
}

static size_t collectors_held(const struct collectors_job *rows, long n, size_t m)
{
    size_t c = 0;

    for (long k = 0; k < n; k++)
        c += (rows[k].held >> m) & 1;
    return c;
}

static void collectors_print_members(const struct collector_set *s,
                                     const struct ctl_answer *answers,
                                     const struct collectors_job *rows, long n, FILE *f)
{
    fprintf(f, "%-28s %-24s %-4s %6s %8s %8s\n", "MEMBER", "ADDRESS", "UP", "JOBS", "PRIMARY",
            "STANDBY");
    for (size_t m = 0; m < s->n; m++) {
        bool up = answers[m].code == CTL_OK;
        char held[24] = "-";
        if (up)
            snprintf(held, sizeof(held), "%zu", collectors_held(rows, n, m));
        fprintf(f, "%-28s %-24s %-4s %6s %8zu %8zu%s%s\n", s->member[m].name, s->member[m].address,
                up ? "yes" : "no", held, collectors_count(rows, n, m, 0),
                collectors_count(rows, n, m, 1), up ? "" : "  ", up ? "" : answers[m].message);
    }
}

static void collectors_print_jobs(const struct collector_set *s, const struct collectors_job *rows,
                                  long n, FILE *f)
{
    fprintf(f, "\n%-24s %-28s %-28s %-8s %s\n", "JOB", "PRIMARY", "STANDBY", "MOVED", "HELD BY");
    for (long k = 0; k < n; k++) {
        const struct collectors_job *j = &rows[k];
        fprintf(f, "%-24s %-28s %-28s %-8s ", j->job, s->member[j->primary].name,
                j->standby == COLLECTORS_NONE ? "-" : s->member[j->standby].name,
                j->moved           ? "primary"
                : j->standby_moved ? "standby"
                                   : "-");
        for (size_t m = 0, first = 1; m < s->n; m++)
            if ((j->held >> m) & 1)
                fprintf(f, "%s%s", first ? "" : ",", s->member[m].name), first = 0;
        fprintf(f, "\n");
    }
    fprintf(f,
            "\n%ld job%s; %zu moved (the primary holds none of it yet), %zu whose standby holds "
            "none of it yet\n",
            n, n == 1 ? "" : "s", collectors_moved(rows, n, false),
            collectors_moved(rows, n, true));
}

/* Member m's object: name, address, up, jobs held, and the jobs it is
 * primary and standby of. */
static json_object *collectors_member_full(const struct collector_set *s,
                                           const struct ctl_answer *a,
                                           const struct collectors_job *rows, long n, size_t m)
{
    json_object *o = collectors_member_json(s, m), *prim = json_object_new_array(),
                *stby = json_object_new_array();

    json_object_object_add(o, "up", json_object_new_boolean(a->code == CTL_OK));
    if (a->code != CTL_OK)
        json_object_object_add(o, "error", json_object_new_string(a->message));
    json_object_object_add(
        o, "jobs_held",
        json_object_new_int64(a->code == CTL_OK ? (int64_t)collectors_held(rows, n, m) : -1));
    for (long k = 0; k < n; k++) {
        if (rows[k].primary == m)
            json_object_array_add(prim, json_object_new_string(rows[k].job));
        if (rows[k].standby == m)
            json_object_array_add(stby, json_object_new_string(rows[k].job));
    }
    json_object_object_add(o, "primary", prim);
    json_object_object_add(o, "standby", stby);
    return o;
}

static json_object *collectors_job_json(const struct collector_set *s,
                                        const struct collectors_job *j)
{
    json_object *o = json_object_new_object(), *held = json_object_new_array();

    json_object_object_add(o, "job", json_object_new_string(j->job));
    json_object_object_add(o, "primary", json_object_new_string(s->member[j->primary].name));
    json_object_object_add(
        o, "standby",
        j->standby == COLLECTORS_NONE ? NULL : json_object_new_string(s->member[j->standby].name));
    for (size_t m = 0; m < s->n; m++)
        if ((j->held >> m) & 1)
            json_object_array_add(held, json_object_new_string(s->member[m].name));
    json_object_object_add(o, "held_by", held);
    json_object_object_add(o, "moved", json_object_new_boolean(j->moved));
    json_object_object_add(o, "standby_moved", json_object_new_boolean(j->standby_moved));
    return o;
}

static void collectors_print_json(const struct collector_set *s, const struct ctl_answer *answers,
                                  const struct collectors_job *rows, long n, FILE *f)
{
    json_object *o = json_object_new_object(), *members = json_object_new_array(),
                *jobs = json_object_new_array();

    for (size_t m = 0; m < s->n; m++)
        json_object_array_add(members, collectors_member_full(s, &answers[m], rows, n, m));
    for (long k = 0; k < n; k++)
        json_object_array_add(jobs, collectors_job_json(s, &rows[k]));
    json_object_object_add(o, "members", members);
    json_object_object_add(o, "jobs", jobs);
    json_object_object_add(o, "moved",
                           json_object_new_int64((int64_t)collectors_moved(rows, n, 0)));
    json_object_object_add(o, "standby_moved",
                           json_object_new_int64((int64_t)collectors_moved(rows, n, 1)));
    collectors_put_json(f, o);
}

int collectors_run(struct ctl_target *t, const struct collectors_options *o, FILE *f)
{
    const struct collector_set *s = ctl_target_set(t);
    Argus__V1__JobsRequest req = ARGUS__V1__JOBS_REQUEST__INIT;
    struct ctl_answer answers[COLLECTOR_SET_MAX];
    ProtobufCMessage *jobs[COLLECTOR_SET_MAX];
    struct collectors_job *rows = NULL;
    size_t up = 0;
    long n;

    if (o->job && *o->job)
        return collectors_place_job(s, o, f);
    ctl_target_call_all(t, RPC_QUERY_JOBS, &req.base, &argus__v1__jobs_response__descriptor,
                        o->timeout_ms, answers);
    for (size_t m = 0; m < s->n; m++) {
        jobs[m] = answers[m].code == CTL_OK ? answers[m].resp : NULL;
        up += jobs[m] != NULL;
        if (!jobs[m] && answers[m].code != CTL_UNREACHABLE && !answers[m].message[0])
            snprintf(answers[m].message, sizeof(answers[m].message), "error");
    }
    n = collectors_table(s, jobs, &rows);
    if (n < 0) {
        fprintf(stderr, "argusctl: out of memory\n");
    } else if (o->json) {
        collectors_print_json(s, answers, rows, n, f);
    } else {
        collectors_print_members(s, answers, rows, n, f);
        collectors_print_jobs(s, rows, n, f);
    }
    free(rows);
    ctl_answers_free(answers, s->n);
    if (up == 0)
        fprintf(stderr, "argusctl: no member of the collector set answered\n");
    return n < 0 ? CTL_ERROR : up ? CTL_OK : CTL_UNREACHABLE;
}
