/* argusctl over a collector set: where the set comes from (flags, the
 * environment, the files, in that order, --collector above all), how the
 * members' answers merge (merge.h: a job's history split by a membership
 * change comes back whole, the newest copy of what two members hold wins),
 * and which member owns which job (collectors.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/collector_set.h"
#include "proto/argus.pb-c.h"
#include "tools/argusctl/collector_address.h"
#include "tools/argusctl/collectors.h"
#include "tools/argusctl/merge.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

struct files {
    char dir[64], user[128], sys[128];
};

static void files_make(struct files *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/argus-test-ctlset-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->user, sizeof(f->user), "%s/user.conf", f->dir);
    snprintf(f->sys, sizeof(f->sys), "%s/system.conf", f->dir);
}

static void files_remove(struct files *f)
{
    unlink(f->user);
    unlink(f->sys);
    rmdir(f->dir);
}

/* --collector wins over a set; a set flag over the environment; the
 * environment over the files; dns: in ARGUSCTL_COLLECTORS is a DNS set. */
static void test_address_set_order(void **state)
{
    struct files f;
    struct collector_address a;
    char err[512];
    struct collector_address_sources in = {0};

    files_make(&f);
    write_text(f.user, "collectors = 10.0.0.1:7700,10.0.0.2:7700\n");
    in.user_file = f.user;
    in.system_file = f.sys;
    in.flag = "10.0.0.9:1";
    in.flag_list = "10.0.0.3:1,10.0.0.4:1";
    in.env_set = "10.0.0.5:1";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.address, "10.0.0.9:1");
    assert_false(collector_address_is_set(&a));
    in.flag = "";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_true(collector_address_is_set(&a));
    assert_string_equal(a.list, "10.0.0.3:1,10.0.0.4:1");
    assert_string_equal(a.source, "--collectors");
    assert_string_equal(a.address, "");
    in.flag_list = NULL;
    in.flag_dns = "argus-collector.argus.svc:7700";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.dns, "argus-collector.argus.svc:7700");
    assert_string_equal(a.source, "--collectors-dns");
    in.flag_dns = NULL;
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.list, "10.0.0.5:1");
    assert_string_equal(a.source, "ARGUSCTL_COLLECTORS");
    in.env_set = "dns:collectors.example:7700";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.dns, "collectors.example:7700");
    in.env = "10.0.0.8:1"; /* the single variable comes first */
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.address, "10.0.0.8:1");
    in.env = in.env_set = NULL;
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.list, "10.0.0.1:7700,10.0.0.2:7700");
    assert_string_equal(a.source, f.user);
    in.user_file = "/nonexistent";
    write_text(f.sys, "collectors_dns = collectors.example:7700\n");
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), 0);
    assert_string_equal(a.dns, "collectors.example:7700");
    assert_false(a.fallback);
    files_remove(&f);
}

/* Every bad value says where it came from. */
static void test_address_set_errors(void **state)
{
    struct files f;
    struct collector_address a;
    char err[512];
    struct collector_address_sources in = {0};

    files_make(&f);
    in.user_file = f.user;
    in.flag_list = "10.0.0.1:1";
    in.flag_dns = "x.example:1";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not both"));
    in.flag_dns = NULL;
    in.flag_list = "10.0.0.1:1,nope";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--collectors: collectors: collector 'nope' is not HOST:PORT"));
    in.flag_list = NULL;
    in.env_set = "dns:noport";
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "ARGUSCTL_COLLECTORS: collectors_dns:"));
    in.env_set = NULL;
    write_text(f.user, "collector = 10.0.0.1:7700\ncollectors = 10.0.0.2:7700\n");
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "set one of collector, collectors and collectors_dns"));
    write_text(f.user, "collectors = 10.0.0.2:7700,bad\n");
    assert_int_equal(collector_address_find(&in, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "user.conf:1: collectors:"));
    files_remove(&f);
}

static Argus__V1__JobInfo *job_info(const char *job, uint64_t last_seen, uint64_t rank_steps)
{
    Argus__V1__JobInfo *j = calloc(1, sizeof(*j));

    argus__v1__job_info__init(j);
    j->job = (char *)job;
    j->last_seen_unix_ns = last_seen;
    j->rank_steps = rank_steps;
    return j;
}

/* Jobs: union by id, the one seen last wins, in job order. */
static void test_merge_jobs(void **state)
{
    Argus__V1__JobsResponse a = ARGUS__V1__JOBS_RESPONSE__INIT, b = ARGUS__V1__JOBS_RESPONSE__INIT;
    Argus__V1__JobInfo *ja[] = {job_info("j1", 100, 10), job_info("j3", 300, 30)};
    Argus__V1__JobInfo *jb[] = {job_info("j1", 200, 20), job_info("j2", 50, 5)};
    ProtobufCMessage *in[] = {&a.base, &b.base};
    Argus__V1__JobsResponse *m;

    a.jobs = ja, a.n_jobs = 2;
    b.jobs = jb, b.n_jobs = 2;
    m = (Argus__V1__JobsResponse *)merge_answers(&argus__v1__jobs_response__descriptor, in, 2);
    assert_non_null(m);
    assert_int_equal(m->n_jobs, 3);
    assert_string_equal(m->jobs[0]->job, "j1");
    assert_int_equal(m->jobs[0]->last_seen_unix_ns, 200);
    assert_int_equal(m->jobs[0]->rank_steps, 20);
    assert_string_equal(m->jobs[1]->job, "j2");
    assert_string_equal(m->jobs[2]->job, "j3");
    argus__v1__jobs_response__free_unpacked(m, NULL);
    for (int i = 0; i < 2; i++)
        free(ja[i]), free(jb[i]);
}

#define NSTEPS 8

struct steps_answer {
    Argus__V1__StepsResponse resp;
    Argus__V1__StepRecord rec[NSTEPS], *recp[NSTEPS];
    Argus__V1__NameEntry name, *namep;
};

/* Steps from..to of ranks 0 and 1, and one name. */
static void steps_answer(struct steps_answer *s, uint64_t from, uint64_t to, uint64_t name_id)
{
    argus__v1__steps_response__init(&s->resp);
    for (uint64_t st = from; st <= to; st++)
        for (uint32_t r = 0; r < 2; r++) {
            size_t i = s->resp.n_steps++;
            argus__v1__step_record__init(&s->rec[i]);
            s->rec[i].job = "j";
            s->rec[i].step = st;
            s->rec[i].rank = r;
            s->recp[i] = &s->rec[i];
        }
    s->resp.steps = s->recp;
    argus__v1__name_entry__init(&s->name);
    s->name.id = name_id;
    s->name.name = name_id == 1 ? "forward" : "backward";
    s->namep = &s->name;
    s->resp.names = &s->namep;
    s->resp.n_names = 1;
}

/* A job that moved: its old owner has steps 0-2, the new one 2-4. */
static void test_merge_steps(void **state)
{
    struct steps_answer a, b;
    ProtobufCMessage *in[] = {&a.resp.base, &b.resp.base};
    Argus__V1__StepsResponse *m;

    steps_answer(&a, 0, 2, 1);
    steps_answer(&b, 2, 4, 2);
    m = (Argus__V1__StepsResponse *)merge_answers(&argus__v1__steps_response__descriptor, in, 2);
    assert_non_null(m);
    assert_int_equal(m->n_steps, 10);
    for (size_t i = 0; i < m->n_steps; i++) {
        assert_int_equal(m->steps[i]->step, i / 2);
        assert_int_equal(m->steps[i]->rank, i % 2);
    }
    assert_int_equal(m->n_names, 2);
    assert_false(m->truncated);
    argus__v1__steps_response__free_unpacked(m, NULL);

    /* the old owner stopped at its limit (step 1, rank 1): nothing above
     * that point is given, so asking again from there misses nothing */
    steps_answer(&a, 0, 1, 1);
    a.resp.truncated = 1;
    m = (Argus__V1__StepsResponse *)merge_answers(&argus__v1__steps_response__descriptor, in, 2);
    assert_non_null(m);
    assert_true(m->truncated);
    assert_int_equal(m->n_steps, 4);
    assert_int_equal(m->steps[3]->step, 1);
    assert_int_equal(m->steps[3]->rank, 1);
    argus__v1__steps_response__free_unpacked(m, NULL);
}

/* Reports and alerts: one per id, the newest copy, in created order. */
static void test_merge_reports_alerts(void **state)
{
    Argus__V1__Report r[3];
    Argus__V1__Report *ra[] = {&r[0], &r[1]}, *rb[] = {&r[2]};
    Argus__V1__StragglersResponse a = ARGUS__V1__STRAGGLERS_RESPONSE__INIT,
                                  b = ARGUS__V1__STRAGGLERS_RESPONSE__INIT;
    ProtobufCMessage *in[] = {&a.base, &b.base};
    Argus__V1__StragglersResponse *m;
    const char *ids[] = {"z-report", "a-report", "z-report"};
    uint64_t created[] = {100, 200, 150};

    for (int i = 0; i < 3; i++) {
        argus__v1__report__init(&r[i]);
        r[i].id = (char *)ids[i];
        r[i].created_unix_ns = created[i];
        r[i].summary = i == 2 ? "newer" : "older";
    }
    a.reports = ra, a.n_reports = 2;
    b.reports = rb, b.n_reports = 1;
    m = (Argus__V1__StragglersResponse *)merge_answers(&argus__v1__stragglers_response__descriptor,
                                                       in, 2);
    assert_non_null(m);
    assert_int_equal(m->n_reports, 2);
    assert_string_equal(m->reports[0]->id, "z-report"); /* created 150 before 200 */
    assert_string_equal(m->reports[0]->summary, "newer");
    assert_string_equal(m->reports[1]->id, "a-report");
    argus__v1__stragglers_response__free_unpacked(m, NULL);

    Argus__V1__Alert al[2], *aa[] = {&al[0]}, *ab[] = {&al[1]};
    Argus__V1__AlertsResponse x = ARGUS__V1__ALERTS_RESPONSE__INIT,
                              y = ARGUS__V1__ALERTS_RESPONSE__INIT;
    ProtobufCMessage *ain[] = {&x.base, &y.base};
    Argus__V1__AlertsResponse *am;

    for (int i = 0; i < 2; i++) {
        argus__v1__alert__init(&al[i]);
        al[i].id = "alert-1";
        al[i].created_unix_ns = 10;
        al[i].firing_unix_ns = 20;
    }
    al[0].status = ARGUS__V1__ALERT_STATUS__ALERT_STATUS_RESOLVED;
    al[0].resolved_unix_ns = 30; /* the standby saw it resolve */
    al[1].status = ARGUS__V1__ALERT_STATUS__ALERT_STATUS_FIRING;
    x.alerts = aa, x.n_alerts = 1;
    y.alerts = ab, y.n_alerts = 1;
    am =
        (Argus__V1__AlertsResponse *)merge_answers(&argus__v1__alerts_response__descriptor, ain, 2);
    assert_non_null(am);
    assert_int_equal(am->n_alerts, 1);
    assert_int_equal(am->alerts[0]->status, ARGUS__V1__ALERT_STATUS__ALERT_STATUS_RESOLVED);
    argus__v1__alerts_response__free_unpacked(am, NULL);
}

/* Heatmap cells: union by (step, rank), cut where a truncated member stopped. */
static void test_merge_heatmap(void **state)
{
    uint32_t ra[] = {0, 1, 0}, rb[] = {0, 1, 0, 1};
    uint64_t sa[] = {0, 0, 1}, sb[] = {1, 1, 2, 2}, va[] = {5, 6, 7}, vb[] = {7, 8, 9, 10};
    Argus__V1__HeatmapResponse a = ARGUS__V1__HEATMAP_RESPONSE__INIT,
                               b = ARGUS__V1__HEATMAP_RESPONSE__INIT;
    ProtobufCMessage *in[] = {&a.base, &b.base};
    Argus__V1__HeatmapResponse *m;

    a.ranks = ra, a.steps = sa, a.values_ns = va, a.n_ranks = a.n_steps = a.n_values_ns = 3;
    b.ranks = rb, b.steps = sb, b.values_ns = vb, b.n_ranks = b.n_steps = b.n_values_ns = 4;
    m = (Argus__V1__HeatmapResponse *)merge_answers(&argus__v1__heatmap_response__descriptor, in,
                                                    2);
    assert_non_null(m);
    assert_int_equal(m->n_steps, 6);
    assert_int_equal(m->steps[5], 2);
    assert_int_equal(m->values_ns[3], 8); /* (1, 1) from the second */
    argus__v1__heatmap_response__free_unpacked(m, NULL);
    a.truncated = 1;
    m = (Argus__V1__HeatmapResponse *)merge_answers(&argus__v1__heatmap_response__descriptor, in,
                                                    2);
    assert_non_null(m);
    assert_true(m->truncated);
    assert_int_equal(m->n_steps, 3); /* up to (1, 0) */
    argus__v1__heatmap_response__free_unpacked(m, NULL);
    assert_false(merge_supported(&argus__v1__batch__descriptor));
    assert_null(merge_answers(&argus__v1__batch__descriptor, in, 2));
}

/* Who owns what: the placement of collector_set_place, the holders from
 * the answers, moved when an up primary holds none of the job. */
static void test_collectors_table(void **state)
{
    struct collector_set *s = malloc(sizeof(*s));
    char err[256], job[32][8];
    Argus__V1__JobInfo info[32], *held[4][32];
    Argus__V1__JobsResponse resp[4];
    ProtobufCMessage *answers[4];
    struct collectors_job *rows;
    size_t at[2], moved = 0;
    long n;

    assert_int_equal(collector_set_parse("a:1,b:1,c:1,d:1", s, err, sizeof(err)), 0);
    for (int m = 0; m < 4; m++) {
        argus__v1__jobs_response__init(&resp[m]);
        resp[m].jobs = held[m];
        answers[m] = &resp[m].base;
    }
    answers[3] = NULL;             /* d is down */
    for (int k = 0; k < 32; k++) { /* each job on member k % 3 only */
        snprintf(job[k], sizeof(job[k]), "job-%d", k);
        argus__v1__job_info__init(&info[k]);
        info[k].job = job[k];
        held[k % 3][resp[k % 3].n_jobs++] = &info[k];
    }
    n = collectors_table(s, answers, &rows);
    assert_int_equal(n, 32);
    for (long k = 0; k < n; k++) {
        int idx = atoi(rows[k].job + 4);
        assert_int_equal(collector_set_place(s, rows[k].job, at), 2);
        assert_int_equal(rows[k].primary, at[0]);
        assert_int_equal(rows[k].standby, at[1]);
        assert_int_equal(rows[k].held, 1ULL << (idx % 3));
        assert_int_equal(rows[k].moved, at[0] != 3 && at[0] != (size_t)(idx % 3));
        moved += rows[k].moved;
        if (k)
            assert_true(strcmp(rows[k - 1].job, rows[k].job) < 0);
    }
    assert_true(moved > 0);
    free(rows);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_address_set_order),    cmocka_unit_test(test_address_set_errors),
        cmocka_unit_test(test_merge_jobs),           cmocka_unit_test(test_merge_steps),
        cmocka_unit_test(test_merge_reports_alerts), cmocka_unit_test(test_merge_heatmap),
        cmocka_unit_test(test_collectors_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
