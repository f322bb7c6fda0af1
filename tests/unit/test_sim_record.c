/* argus-sim --record (tools/argus-sim/record.h): plain and scenario records,
 * one file or one per node; every file holds its node's resources and the
 * names once, its ranks' steps in step order, and the agent's record replay
 * source accepts it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/sources/records.h"
#include "tools/argus-sim/gen.h"
#include "tools/argus-sim/record.h"

/* What one records file holds. */
struct parsed {
    size_t names, resources, steps;
    uint64_t name_ids[256];
    uint32_t res_rank[64];
    char res_node[64][32];
    uint32_t step_rank[4096];
    uint64_t step[4096];
};

static void parse(const char *path, struct parsed *p)
{
    FILE *f = fopen(path, "re");
    uint8_t hdr[5], *buf = malloc(RECORDS_MAX_ENTRY);

    assert_non_null(f);
    memset(p, 0, sizeof(*p));
    while (fread(hdr, 1, 5, f) == 5) {
        uint32_t n =
            hdr[1] | (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3] << 16 | (uint32_t)hdr[4] << 24;
        assert_true(n < RECORDS_MAX_ENTRY);
        assert_int_equal(fread(buf, 1, n, f), n);
        if (hdr[0] == RECORDS_NAME) {
            Argus__V1__NameEntry *e = argus__v1__name_entry__unpack(NULL, n, buf);
            assert_non_null(e);
            for (size_t i = 0; i < p->names; i++)
                assert_true(p->name_ids[i] != e->id); /* each name once */
            assert_true(p->names < 256);
            p->name_ids[p->names++] = e->id;
            argus__v1__name_entry__free_unpacked(e, NULL);
        } else if (hdr[0] == RECORDS_RESOURCE) {
            Argus__V1__Resource *r = argus__v1__resource__unpack(NULL, n, buf);
            assert_non_null(r);
            assert_true(p->resources < 64);
            p->res_rank[p->resources] = r->rank;
            snprintf(p->res_node[p->resources++], 32, "%s", r->node);
            argus__v1__resource__free_unpacked(r, NULL);
        } else {
            assert_int_equal(hdr[0], RECORDS_STEP);
            Argus__V1__StepRecord *s = argus__v1__step_record__unpack(NULL, n, buf);
            assert_non_null(s);
            assert_true(p->steps < 4096);
            p->step_rank[p->steps] = s->rank;
            p->step[p->steps++] = s->step;
            argus__v1__step_record__free_unpacked(s, NULL);
        }
    }
    fclose(f);
    free(buf);
}

/* File of node (or the whole job): ranks [first, first + n), steps 0..steps-1
 * of each, in step order, each once. */
static void check_file(const struct parsed *p, uint32_t first, uint32_t n, uint64_t steps)
{
    assert_int_equal(p->resources, n);
    for (size_t i = 0; i < p->resources; i++)
        assert_true(p->res_rank[i] >= first && p->res_rank[i] < first + n);
    assert_int_equal(p->steps, n * steps);
    for (size_t i = 0; i < p->steps; i++) {
        assert_true(p->step_rank[i] >= first && p->step_rank[i] < first + n);
        if (i)
            assert_true(p->step[i] >= p->step[i - 1]);
    }
    for (uint32_t r = first; r < first + n; r++) {
        uint64_t seen = 0;
        for (size_t i = 0; i < p->steps; i++)
            seen += p->step_rank[i] == r;
        assert_int_equal(seen, steps);
    }
    assert_true(p->names > 0);
}

/* The agent's own reader takes the file. */
static void check_replayable(const char *path)
{
    struct records_config rc = {path, 10};
    char why[256] = "";
    void *src = source_records_ops.create(&rc, why, sizeof(why));

    if (!src)
        fail_msg("%s: %s", path, why);
    source_records_ops.destroy(src);
}

static struct sim_config config(char *dir, const char *scenario, uint64_t ranks, bool split)
{
    static char path[256];

    snprintf(path, sizeof(path), "%s/rec", dir);
    return (struct sim_config){.job = "rec-job",
                               .ranks = ranks,
                               .ranks_per_node = 8,
                               .steps = 5,
                               .seed = 3,
                               .steps_per_batch = 4,
                               .step_ns = 100000000,
                               .base_unix_ns = 1800000000000000000ULL,
                               .tp = 2,
                               .pp = 1,
                               .agent_prefix = "a-",
                               .record = path,
                               .record_split = split,
                               .scenario = (char *)scenario,
                               .onset = 2,
                               .fault_rank = -1};
}

static void test_plain_split(void **state)
{
    char dir[] = "/tmp/test_sim_record.XXXXXX", path[300];
    struct parsed *p = malloc(sizeof(*p));

    assert_non_null(mkdtemp(dir));
    struct sim_config c = config(dir, "", 20, true);
    assert_int_equal(sim_record(&c), 0);
    for (uint32_t node = 0; node < 3; node++) {
        snprintf(path, sizeof(path), "%s.node%u", c.record, node);
        parse(path, p);
        check_file(p, node * 8, node < 2 ? 8 : 4, 5);
        assert_int_equal(p->names, GEN_NAMES);
        check_replayable(path);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s.node3", c.record);
    assert_int_not_equal(access(path, F_OK), 0); /* 20 ranks make 3 nodes */
    rmdir(dir);
    free(p);
}

static void test_scenario_split(void **state)
{
    char dir[] = "/tmp/test_sim_record.XXXXXX", path[300];
    struct parsed *p = malloc(sizeof(*p));

    assert_non_null(mkdtemp(dir));
    struct sim_config c = config(dir, "compute-straggler", 16, true);
    assert_int_equal(sim_record(&c), 0);
    for (uint32_t node = 0; node < 2; node++) {
        snprintf(path, sizeof(path), "%s.node%u", c.record, node);
        parse(path, p);
        check_file(p, node * 8, 8, 5);
        for (size_t i = 0; i < p->resources; i++) /* node names as the scenario sets them */
            assert_int_equal(p->res_node[i][strlen(p->res_node[i]) - 1], '0' + node);
        check_replayable(path);
        unlink(path);
    }
    rmdir(dir);
    free(p);
}

static void test_scenario_one_file(void **state)
{
    char dir[] = "/tmp/test_sim_record.XXXXXX";
    struct parsed *p = malloc(sizeof(*p));

    assert_non_null(mkdtemp(dir));
    struct sim_config c = config(dir, "healthy", 24, false);
    assert_int_equal(sim_record(&c), 0);
    parse(c.record, p);
    check_file(p, 0, 24, 5); /* steps_per_batch 4 asked: still in step order */
    check_replayable(c.record);
    unlink(c.record);
    rmdir(dir);
    free(p);
}

static void test_unwritable(void **state)
{
    struct sim_config c = config("/nonexistent-dir", "", 8, true);

    assert_true(sim_record(&c) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_split),
        cmocka_unit_test(test_scenario_split),
        cmocka_unit_test(test_scenario_one_file),
        cmocka_unit_test(test_unwritable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
