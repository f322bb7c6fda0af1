/* Fleet memory (collector/fleet/fleet.h) over a real store: which
 * suspects count (paging, with a node, of a fleet cause), distinct jobs per
 * node, the window, the snapshot in /metrics; the ranking
 * (common/fleet_rank.h), the merge of a collector set's answers
 * (argusctl merge_nodes.h) and the exclude lists (argusctl nodes.h). */
#include "tests/unit/store_fixture.h"

#include "collector/fleet/fleet.h"
#include "common/fleet_rank.h"
#include "common/http.h"
#include "tools/argusctl/merge_nodes.h"
#include "tools/argusctl/nodes.h"

struct tsuspect {
    const char *node;
    int gpu;
    Argus__V1__Cause cause;
    bool pages;
};

#define C(x) ARGUS__V1__CAUSE__CAUSE_##x

static void put(struct store *s, const char *id, const char *job, uint64_t created,
                const struct tsuspect *ts, size_t n)
{
    Argus__V1__Report r = ARGUS__V1__REPORT__INIT;
    Argus__V1__Suspect sus[8], *ptrs[8];
    char err[256];

    for (size_t i = 0; i < n; i++) {
        argus__v1__suspect__init(&sus[i]);
        sus[i].rank = (uint32_t)i;
        sus[i].node = (char *)ts[i].node;
        sus[i].gpu = ts[i].gpu;
        sus[i].cause = ts[i].cause;
        sus[i].pages = ts[i].pages;
        ptrs[i] = &sus[i];
    }
    r.id = (char *)id;
    r.job = (char *)job;
    r.created_unix_ns = created;
    r.summary = "test";
    r.suspects = ptrs;
    r.n_suspects = n;
    assert_int_equal(store_put_report(s, &r, err, sizeof(err)), 0);
}

/* node-a: three jobs (one twice, one on another GPU); node-d: a hang and a
 * death; node-b, node-c and "" only what never counts. */
static void put_fleet(struct store *s)
{
    put(s, "r1", "j1", T0 + 10, (struct tsuspect[]){{"node-a", 0, C(COMPUTE), true}}, 1);
    put(s, "r2", "j1", T0 + 20, (struct tsuspect[]){{"node-a", 0, C(COMPUTE), true}}, 1);
    put(s, "r3", "j2", T0 + 30,
        (struct tsuspect[]){{"node-a", 0, C(LINK), true}, {"node-b", 0, C(IMBALANCE), true}}, 2);
    put(s, "r4", "j3", T0 + 40,
        (struct tsuspect[]){{"node-a", 1, C(HOST), true}, {"node-b", 1, C(DATA_SKEW), false}}, 2);
    put(s, "r5", "j4", T0 + 50,
        (struct tsuspect[]){{"node-c", 0, C(COMPUTE), false}, {"", 2, C(COMPUTE), true}}, 2);
    put(s, "r6", "j5", T0 + 60, (struct tsuspect[]){{"node-d", 3, C(HANG), true}}, 1);
    put(s, "r7", "j6", T0 + 70,
        (struct tsuspect[]){{"node-d", 3, C(EXITED), true}, {"node-b", 0, C(JOB_REGRESSION), true}},
        2);
    put(s, "r0", "j7", T0 - 1000, (struct tsuspect[]){{"node-z", 0, C(COMPUTE), true}}, 1);
}

static void test_collect_and_rank(void **state)
{
    struct fix *f = *state;
    Argus__V1__NodesResponse resp = ARGUS__V1__NODES_RESPONSE__INIT;
    struct fleet_rank_node *ranked;

    put_fleet(f->s);
    /* rows: node-a gpu0 j1 (r2, the newest), j2; gpu1 j3; node-d gpu3 j5, j6 */
    assert_int_equal(fleet_collect(f->s, T0, &resp), 5);
    assert_false(resp.truncated);
    assert_string_equal(resp.culprits[0]->node, "node-a");
    assert_string_equal(resp.culprits[0]->job, "j1");
    assert_string_equal(resp.culprits[0]->report_id, "r2");
    assert_int_equal(fleet_rank(resp.culprits, resp.n_culprits, &ranked), 2);
    assert_string_equal(ranked[0].node, "node-a");
    assert_int_equal(ranked[0].jobs, 3);
    assert_int_equal(ranked[0].gpus, 2);
    assert_int_equal(ranked[0].last_unix_ns, T0 + 40);
    assert_int_equal(fleet_rank_gpu_jobs(resp.culprits, ranked[0].first, ranked[0].n, 0), 2);
    assert_int_equal(fleet_rank_gpu_jobs(resp.culprits, ranked[0].first, ranked[0].n, 1), 1);
    assert_string_equal(ranked[1].node, "node-d");
    assert_int_equal(ranked[1].jobs, 2);
    free(ranked);
    fleet_rows_free(&resp);
    /* the window: the old report of node-z counts only from before it */
    assert_int_equal(fleet_collect(f->s, T0 - 2000, &resp), 6);
    fleet_rows_free(&resp);
    assert_int_equal(fleet_collect(f->s, T0 + 45, &resp), 2); /* node-d's two jobs only */
    assert_string_equal(resp.culprits[0]->node, "node-d");
    fleet_rows_free(&resp);
}

static void test_snapshot_metrics(void **state)
{
    struct fix *f = *state;
    struct fleet_options o = {.window_ns = 100, .suspect_jobs = 3, .refresh_ns = 60 * NSEC_PER_SEC};
    struct fleet *fl = fleet_new(f->s, &o);
    struct http_buf b = {0};
    Argus__V1__NodesResponse resp = ARGUS__V1__NODES_RESPONSE__INIT;

    put_fleet(f->s);
    assert_int_equal(fleet_tick(fl, T0 + 80), 1); /* window T0 - 20 .. */
    assert_int_equal(fleet_tick(fl, T0 + 81), 0); /* not due */
    fleet_write_metrics(fl, &b);
    assert_non_null(strstr(b.data, "argus_node_culprit_jobs{node=\"node-a\"} 3\n"));
    assert_non_null(strstr(b.data, "argus_node_culprit_jobs{node=\"node-d\"} 2\n"));
    assert_null(strstr(b.data, "node-b"));
    assert_null(strstr(b.data, "node-z"));
    assert_non_null(strstr(b.data, "argus_fleet_culprit_nodes 2\n"));
    assert_non_null(strstr(b.data, "argus_fleet_suspect_nodes 1\n"));
    free(b.data);
    assert_int_equal(fleet_answer(fl, 0, T0 + 80, &resp), 5);
    assert_int_equal(resp.since_unix_ns, T0 - 20);
    assert_int_equal(resp.suspect_jobs, 3);
    fleet_rows_free(&resp);
    fleet_free(fl);
}

/* Two members holding the same job (primary and standby) count it once. */
static void test_merge_and_exclude(void **state)
{
    struct fix *f = *state;
    Argus__V1__NodesResponse a = ARGUS__V1__NODES_RESPONSE__INIT, b = a;
    Argus__V1__NodesResponse *m;
    struct nodes_options o = {.min_jobs = 2, .format = NODES_FORMAT_SLURM};
    char *text = NULL;
    size_t len = 0;
    FILE *out;

    put_fleet(f->s);
    assert_int_equal(fleet_collect(f->s, T0, &a), 5);
    assert_int_equal(fleet_collect(f->s, T0 + 35, &b), 3); /* j3, j5, j6: all in a too */
    a.suspect_jobs = 3;
    m = (Argus__V1__NodesResponse *)merge_nodes((ProtobufCMessage *[]){&a.base, &b.base}, 2);
    assert_non_null(m);
    assert_int_equal(m->n_culprits, 5);
    assert_int_equal(m->suspect_jobs, 3);
    out = open_memstream(&text, &len);
    assert_int_equal(nodes_print_exclude(out, m, &o), 2);
    fclose(out);
    assert_string_equal(text, "node-a,node-d\n");
    free(text);
    o = (struct nodes_options){.format = NODES_FORMAT_K8S}; /* min_jobs 0: suspect_jobs, 3 */
    out = open_memstream(&text, &len);
    assert_int_equal(nodes_print_exclude(out, m, &o), 1);
    fclose(out);
    assert_non_null(strstr(text, "operator: NotIn"));
    assert_non_null(strstr(text, "- \"node-a\"\n"));
    assert_null(strstr(text, "node-d"));
    free(text);
    argus__v1__nodes_response__free_unpacked(m, NULL);
    fleet_rows_free(&a);
    fleet_rows_free(&b);
}

static void test_empty_and_bad_names(void **state)
{
    Argus__V1__NodesResponse r = ARGUS__V1__NODES_RESPONSE__INIT;
    Argus__V1__NodeCulprit row = ARGUS__V1__NODE_CULPRIT__INIT, *rows[] = {&row};
    struct nodes_options o = {.min_jobs = 1, .format = NODES_FORMAT_K8S};
    enum nodes_format fmt;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    (void)state;
    assert_int_equal(nodes_print_exclude(out, &r, &o), 0); /* nothing: no affinity */
    fclose(out);
    assert_string_equal(text, "affinity: {}\n");
    free(text);
    row.node = "a,b";
    row.job = "j";
    row.report_id = "r";
    r.culprits = rows;
    r.n_culprits = 1;
    o.format = NODES_FORMAT_SLURM;
    out = open_memstream(&text, &len);
    assert_int_equal(nodes_print_exclude(out, &r, &o), 0); /* a comma would split it */
    fclose(out);
    assert_string_equal(text, "\n");
    free(text);
    assert_int_equal(nodes_parse_format("k8s", &fmt), 0);
    assert_int_equal(fmt, NODES_FORMAT_K8S);
    assert_int_equal(nodes_parse_format("pbs", &fmt), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_collect_and_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_and_exclude, setup, teardown),
        cmocka_unit_test(test_empty_and_bad_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
