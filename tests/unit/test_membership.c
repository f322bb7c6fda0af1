/* collector/membership: the collector's role for each job its store holds
 * under the current set: what collector_set_place says of the job and this
 * collector (cluster.self, else grpc.listen, else the host name); a
 * collector that is not a member owns nothing; no set at all is a set of
 * one that is every job's primary. A real store in a temporary directory. */
#include "tests/unit/store_fixture.h"

#include "collector/membership.h"
#include "common/collector_set.h"

#define MEMBERS "127.0.0.1:7711,127.0.0.1:7712,127.0.0.1:7713"
#define NJOBS 24

static void put_jobs(struct store *s)
{
    char job[32], err[256];

    for (int k = 0; k < NJOBS; k++) {
        snprintf(job, sizeof(job), "job-%d", k);
        struct tbatch *t = tbatch_new("agent-1", (uint64_t)k + 1, job, 0, 1, 0, 1, T0);
        assert_int_equal(store_ingest(s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
        tbatch_free(t);
    }
}

/* What each member should own, from the placement itself. */
static void expected(const char *self, uint64_t want[MEMBERSHIP_ROLES])
{
    struct collector_set *set = malloc(sizeof(*set));
    char err[256], job[32];
    size_t at[2];

    assert_int_equal(collector_set_parse(MEMBERS, set, err, sizeof(err)), 0);
    memset(want, 0, MEMBERSHIP_ROLES * sizeof(*want));
    for (int k = 0; k < NJOBS; k++) {
        snprintf(job, sizeof(job), "job-%d", k);
        collector_set_place(set, job, at);
        int i = collector_set_find(set, self);
        want[at[0] == (size_t)i   ? MEMBERSHIP_PRIMARY
             : at[1] == (size_t)i ? MEMBERSHIP_STANDBY
                                  : MEMBERSHIP_OTHER]++;
    }
    free(set);
}

static void test_roles(void **state)
{
    struct fix *f = *state;
    const char *selves[] = {"127.0.0.1:7711", "127.0.0.1:7712", "127.0.0.1:7713"};
    uint64_t primary = 0, standby = 0, want[MEMBERSHIP_ROLES];
    struct membership_counts c;
    char err[256];

    put_jobs(f->s);
    for (int i = 0; i < 3; i++) {
        struct membership *m;
        struct membership_options o = {.set = MEMBERS, .grpc_listen = "0.0.0.0:7700"};
        o.self = selves[i];
        assert_int_equal(membership_new(&o, &m, err, sizeof(err)), 0);
        assert_int_equal(membership_count(m, f->s, &c), 0);
        expected(selves[i], want);
        assert_int_equal(c.members, 3);
        assert_true(c.self_found);
        assert_memory_equal(c.jobs, want, sizeof(want));
        assert_int_equal(c.jobs[0] + c.jobs[1] + c.jobs[2], NJOBS);
        primary += c.jobs[MEMBERSHIP_PRIMARY];
        standby += c.jobs[MEMBERSHIP_STANDBY];
        membership_free(m);
    }
    assert_int_equal(primary, NJOBS); /* each job has one primary and one standby */
    assert_int_equal(standby, NJOBS);
}

/* No cluster.self: grpc.listen names it when it is a member. */
static void test_self_from_listen(void **state)
{
    struct fix *f = *state;
    struct membership_options o = {.set = MEMBERS, .self = "", .grpc_listen = "127.0.0.1:7712"};
    struct membership *m;
    struct membership_counts c;
    uint64_t want[MEMBERSHIP_ROLES];
    struct collector_set *set = malloc(sizeof(*set));
    char err[256];

    put_jobs(f->s);
    assert_int_equal(collector_set_parse(MEMBERS, set, err, sizeof(err)), 0);
    assert_int_equal(collector_set_find(set, "127.0.0.1:7712"), 1);
    assert_int_equal(membership_new(&o, &m, err, sizeof(err)), 0);
    assert_int_equal(membership_count(m, f->s, &c), 0);
    expected("127.0.0.1:7712", want);
    assert_memory_equal(c.jobs, want, sizeof(want));
    for (int k = 0; k < NJOBS; k++) { /* job by job, as the placement says */
        char job[32];
        size_t at[2];
        snprintf(job, sizeof(job), "job-%d", k);
        assert_int_equal(collector_set_place(set, job, at), 2);
        assert_int_equal(membership_role(m, job), at[0] == 1   ? MEMBERSHIP_PRIMARY
                                                  : at[1] == 1 ? MEMBERSHIP_STANDBY
                                                               : MEMBERSHIP_OTHER);
    }
    free(set);
    membership_free(m);
}

/* Not a member: every job is another's; no set: every job is ours. */
static void test_not_member_and_alone(void **state)
{
    struct fix *f = *state;
    struct membership_options o = {.set = MEMBERS, .self = "10.9.9.9:1", .grpc_listen = ""};
    struct membership *m;
    struct membership_counts c;
    char err[256];

    put_jobs(f->s);
    assert_int_equal(membership_new(&o, &m, err, sizeof(err)), 0);
    assert_int_equal(membership_count(m, f->s, &c), 0);
    assert_false(c.self_found);
    assert_int_equal(c.jobs[MEMBERSHIP_OTHER], NJOBS);
    membership_free(m);

    o = (struct membership_options){.grpc_listen = "0.0.0.0:7700"};
    assert_int_equal(membership_new(&o, &m, err, sizeof(err)), 0);
    assert_int_equal(membership_count(m, f->s, &c), 0);
    assert_int_equal(c.members, 1);
    assert_true(c.self_found);
    assert_int_equal(c.jobs[MEMBERSHIP_PRIMARY], NJOBS);
    assert_int_equal(membership_role(m, "anything"), MEMBERSHIP_PRIMARY);
    membership_free(m);

    o = (struct membership_options){.set = "127.0.0.1:1,nope"};
    assert_int_equal(membership_new(&o, &m, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "nope"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_self_from_listen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_member_and_alone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
