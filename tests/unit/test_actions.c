/* collector/actions on a real store with a real hook (a shell script that
 * logs its calls): dry run runs nothing and records would_run; a real run
 * calls the hook once per (node, cause) with the report on stdin and the
 * ARGUS_* environment; findings and suspects without a node do not act;
 * the breaker trips after max runs and survives a restart; reset closes
 * it; undo runs the hook with ARGUS_ACTION=undo only for a drain argus did;
 * a failing hook is recorded as failed; bad rules are refused by name. */
#include "tests/unit/store_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include "collector/actions/actions.h"

static char hook[128], calls[128];

/* A hook that appends "ACTION NODE CAUSE DRY_RUN job-from-stdin" to calls;
 * it fails for node "bad". */
static void write_hook(const char *dir)
{
    FILE *f;

    snprintf(hook, sizeof(hook), "%s/hook.sh", dir);
    snprintf(calls, sizeof(calls), "%s/calls", dir);
    f = fopen(hook, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "job=$(grep -o '\"job\": *\"[^\"]*\"' | head -1)\n"
            "echo \"$ARGUS_ACTION $ARGUS_NODE $ARGUS_CAUSE $ARGUS_DRY_RUN $job\" >> %s\n"
            "echo ran for $ARGUS_NODE\n"
            "[ \"$ARGUS_NODE\" != bad ]\n",
            calls);
    fclose(f);
    chmod(hook, 0755);
}

/* Lines of the calls file (0 when missing). */
static int count_calls(const char *want)
{
    char line[512];
    int n = 0;
    FILE *f = fopen(calls, "r");

    while (f && fgets(line, sizeof(line), f))
        n += !want || strstr(line, want) != NULL;
    if (f)
        fclose(f);
    return n;
}

static Argus__V1__ActionsResponse *list(struct actions *a)
{
    void *data;
    size_t len;
    Argus__V1__ActionsResponse *r;

    assert_int_equal(actions_list_packed(a, 0, &data, &len), 0);
    r = argus__v1__actions_response__unpack(NULL, len, data);
    free(data);
    assert_non_null(r);
    return r;
}

/* Wait until a holds n records (the worker acts asynchronously). */
static Argus__V1__ActionsResponse *wait_records(struct actions *a, size_t n)
{
    for (int i = 0; i < 500; i++) {
        Argus__V1__ActionsResponse *r = list(a);
        if (r->n_actions >= n)
            return r;
        argus__v1__actions_response__free_unpacked(r, NULL);
        usleep(10000);
    }
    fail_msg("fewer than %zu action records after 5 s", n);
    return NULL;
}

static void report(struct actions *a, const char *id, const char *node, bool pages)
{
    Argus__V1__Report r = ARGUS__V1__REPORT__INIT;
    Argus__V1__Suspect s = ARGUS__V1__SUSPECT__INIT, s2 = ARGUS__V1__SUSPECT__INIT;
    Argus__V1__Suspect *ps[2] = {&s, &s2};

    r.id = (char *)id;
    r.job = "train";
    r.summary = "slow";
    r.pages = pages;
    r.n_suspects = 2;
    r.suspects = ps;
    s.node = (char *)node;
    s.cause = ARGUS__V1__CAUSE__CAUSE_COMPUTE;
    s.pages = pages;
    s2 = s; /* the same node and cause twice in one report: one action */
    actions_observe(a, &r);
}

static struct actions *start(struct fix *f, bool dry_run, uint32_t max)
{
    char rules[200], err[256];
    struct actions_options o = {.rules = rules,
                                .dry_run = dry_run,
                                .max = max,
                                .window_ns = 3600 * NSEC_PER_SEC,
                                .timeout_ns = 5 * NSEC_PER_SEC};
    struct actions *a = NULL;

    snprintf(rules, sizeof(rules), "compute:%s, link:%s", hook, hook);
    assert_int_equal(actions_new(f->s, &o, &a, err, sizeof(err)), 0);
    return a;
}

static void test_dry_run(void **state)
{
    struct fix *f = *state;
    struct actions *a;
    Argus__V1__ActionsResponse *r;

    write_hook(f->dir);
    a = start(f, true, 3);
    report(a, "r1", "n1", true);
    report(a, "r2", "n1", true);  /* stands: nothing new */
    report(a, "r3", "", true);    /* no node: nothing */
    report(a, "r4", "n2", false); /* a finding: nothing */
    r = wait_records(a, 1);
    usleep(200000);
    argus__v1__actions_response__free_unpacked(r, NULL);
    r = list(a);
    assert_int_equal(r->n_actions, 1);
    assert_string_equal(r->actions[0]->outcome, "would_run");
    assert_true(r->actions[0]->dry_run);
    assert_string_equal(r->actions[0]->node, "n1");
    assert_string_equal(r->actions[0]->report_id, "r1");
    assert_non_null(strstr(r->actions[0]->output, "would run"));
    assert_true(r->dry_run);
    assert_int_equal(count_calls(NULL), 0); /* the hook never ran */
    argus__v1__actions_response__free_unpacked(r, NULL);
    actions_free(a);
}

static void test_real_breaker_restart_undo(void **state)
{
    struct fix *f = *state;
    struct actions *a;
    Argus__V1__ActionsResponse *r;
    Argus__V1__Action *x = NULL;
    char err[256];
    bool was_open;

    write_hook(f->dir);
    a = start(f, false, 2);
    report(a, "r1", "n1", true);
    report(a, "r2", "n1", true);
    report(a, "r3", "n2", true);
    report(a, "r4", "n3", true); /* the third real run: trips */
    report(a, "r5", "n4", true); /* open: nothing */
    r = wait_records(a, 3);
    usleep(200000);
    argus__v1__actions_response__free_unpacked(r, NULL);
    r = list(a);
    assert_int_equal(r->n_actions, 3);
    assert_string_equal(r->actions[0]->outcome, "done");
    assert_int_equal(r->actions[0]->exit_status, 0);
    assert_non_null(strstr(r->actions[0]->output, "ran for n1"));
    assert_string_equal(r->actions[2]->kind, "breaker_open");
    assert_true(r->breaker->open);
    argus__v1__actions_response__free_unpacked(r, NULL);
    assert_int_equal(count_calls("drain n1 compute 0 \"job\":\"train\""), 1);
    assert_int_equal(count_calls("drain"), 2);
    actions_free(a);

    a = start(f, false, 2); /* a restart keeps the breaker open */
    r = list(a);
    assert_true(r->breaker->open);
    assert_int_equal(r->n_actions, 3);
    argus__v1__actions_response__free_unpacked(r, NULL);
    report(a, "r6", "n1", true); /* stands, from the store */
    /* undo: only a drain argus did */
    assert_int_equal(actions_undo(a, "3", "me", &x, err, sizeof(err)), -EPERM);
    assert_int_equal(actions_undo(a, "99", "me", &x, err, sizeof(err)), -ENOENT);
    assert_int_equal(actions_undo(a, "1", "me", &x, err, sizeof(err)), 0);
    assert_true(x->undone);
    assert_string_equal(x->by, "me");
    argus__v1__action__free_unpacked(x, NULL);
    assert_int_equal(actions_undo(a, "1", "me", &x, err, sizeof(err)), -EPERM); /* once */
    assert_int_equal(count_calls("undo n1 compute"), 1);
    assert_int_equal(actions_reset(a, "me", "checked", &was_open, err, sizeof(err)), 0);
    assert_true(was_open);
    report(a, "r7", "bad", true); /* acts again; the hook fails */
    r = wait_records(a, 5);
    assert_false(r->breaker->open);
    assert_string_equal(r->actions[3]->kind, "breaker_reset");
    assert_string_equal(r->actions[3]->reason, "checked");
    assert_string_equal(r->actions[4]->outcome, "failed");
    assert_int_equal(r->actions[4]->exit_status, 1);
    argus__v1__actions_response__free_unpacked(r, NULL);
    assert_int_equal(actions_undo(a, "5", "me", &x, err, sizeof(err)), -EPERM);
    actions_free(a);
}

static void test_bad_rules(void **state)
{
    char err[256] = "";
    struct actions_options o = {.rules = "compute:relative/path"};

    assert_int_equal(actions_check(&o, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "actions.rules"));
    o.rules = "data_skew:/bin/true";
    assert_int_equal(actions_check(&o, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "never pages"));
    o.rules = "bogus:/bin/true";
    assert_int_equal(actions_check(&o, err, sizeof(err)), -EINVAL);
    o.rules = "compute /bin/true";
    assert_int_equal(actions_check(&o, err, sizeof(err)), -EINVAL);
    o.rules = " *:/bin/true ";
    assert_int_equal(actions_check(&o, err, sizeof(err)), 0);
    o.rules = "";
    assert_int_equal(actions_check(&o, err, sizeof(err)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_breaker_restart_undo, setup, teardown),
        cmocka_unit_test(test_bad_rules),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
