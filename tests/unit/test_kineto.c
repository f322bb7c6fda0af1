/* The Kineto trace reader: the real traces in shared/data/kineto (counts from
 * its README), step assignment through correlation ids, and bad input. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "agent/sources/kineto.h"
#include "agent/steps/summarize.h"
#include "common/name_id.h"

static char data_dir[PATH_MAX];

/* $ARGUS_KINETO_DIR, else REPO/../shared/data/kineto (or REPO/shared/...)
 * with REPO the first directory above this binary that holds tests/run.sh. */
static int find_data_dir(void)
{
    const char *env = getenv("ARGUS_KINETO_DIR");
    char exe[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n;

    if (env) {
        snprintf(data_dir, sizeof(data_dir), "%s", env);
        return access(data_dir, R_OK) == 0 ? 0 : -ENOENT;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -ENOENT;
    exe[n] = 0;
    for (char *slash = strrchr(exe, '/'); slash; slash = strrchr(exe, '/')) {
        *slash = 0;
        snprintf(probe, sizeof(probe), "%s/tests/run.sh", exe);
        if (access(probe, R_OK) == 0) {
            snprintf(data_dir, sizeof(data_dir), "%.*s/../shared/data/kineto", PATH_MAX - 32, exe);
            if (access(data_dir, R_OK) == 0)
                return 0;
            snprintf(data_dir, sizeof(data_dir), "%.*s/shared/data/kineto", PATH_MAX - 32, exe);
            return access(data_dir, R_OK) == 0 ? 0 : -ENOENT;
        }
    }
    return -ENOENT;
}

static struct kineto_trace *load_real(const char *file)
{
    char path[PATH_MAX + 64], err[256] = "";
    struct kineto_trace *t = NULL;
    int rc;

    snprintf(path, sizeof(path), "%s/%s", data_dir, file);
    rc = kineto_load(path, NULL, &t, err, sizeof(err));
    if (rc < 0)
        print_message("%s: %s\n", path, err);
    assert_int_equal(rc, 0);
    assert_non_null(t);
    return t;
}

/* Kernels per step, and the name ids agree with common/name_id.h. */
static void check_steps(const struct kineto_trace *t, const size_t *per_step)
{
    size_t counts[8] = {0}, outside = 0;

    for (size_t i = 0; i < t->n_spans; i++) {
        assert_true(t->spans[i].name < t->n_names);
        if (t->spans[i].step < 0)
            outside++;
        else
            counts[t->spans[i].step]++;
    }
    assert_int_equal(outside, 0);
    for (size_t s = 0; s < t->n_steps; s++)
        assert_int_equal(counts[s], per_step[s]);
    for (size_t i = 0; i < t->n_names; i++)
        assert_int_equal(t->name_ids[i], name_id(t->names[i]));
}

static void test_real_rank0(void **state)
{
    static const size_t per_step[] = {577, 577};
    struct kineto_trace *t;

    if (!data_dir[0])
        skip();
    t = load_real("trace_filter__sampled_rank-0.json.gz");
    assert_int_equal(t->n_spans, 1154);
    assert_int_equal(t->n_names, 194);
    assert_int_equal(t->n_steps, 2);
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->world_size, 128);
    assert_int_equal(t->steps[0].number, 551);
    assert_int_equal(t->steps[1].number, 552);
    assert_int_equal(t->steps[0].ts_ns, 1682725898079292000ULL);
    assert_int_equal(t->steps[0].dur_ns, 607312000ULL);
    /* the first kernel: permute_2D_lengths_kernel<int>, ts 1682725898082228 us, dur 10 us */
    assert_non_null(strstr(t->names[t->spans[0].name], "permute_2D_lengths_kernel<int>"));
    assert_int_equal(t->spans[0].ts_ns, 1682725898082228000ULL);
    assert_int_equal(t->spans[0].dur_ns, 10000);
    assert_int_equal(t->spans[0].stream, 23);
    assert_int_equal(t->spans[0].device, 0);
    assert_int_equal(t->spans[0].correlation, 6935929);
    assert_int_not_equal(t->spans[0].shape, 0); /* args.grid and args.block */
    assert_int_equal(t->skipped, 0);
    check_steps(t, per_step);
    kineto_free(t);
}

static void test_real_rank1(void **state)
{
    static const size_t per_step[] = {552, 552};
    struct kineto_trace *t;

    if (!data_dir[0])
        skip();
    t = load_real("trace_filter__sampled_rank-1.json.gz");
    assert_int_equal(t->n_spans, 1104);
    assert_int_equal(t->n_names, 183);
    assert_int_equal(t->n_steps, 2);
    assert_int_equal(t->rank, 1);
    assert_int_equal(t->world_size, 128);
    assert_int_equal(t->spans[0].device, 1);
    check_steps(t, per_step);
    kineto_free(t);
}

static void test_real_nccl(void **state)
{
    static const size_t per_step[] = {900, 900, 900};
    struct kineto_trace *t;

    if (!data_dir[0])
        skip();
    t = load_real("nccl_parser_config__nccl_data.json.gz");
    assert_int_equal(t->n_spans, 2700);
    assert_int_equal(t->n_names, 70);
    assert_int_equal(t->n_steps, 3);
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->world_size, 2);
    assert_int_equal(t->steps[0].number, 4);
    assert_int_equal(t->steps[2].number, 6);
    /* fractional microseconds: ts 4458676983543.183 us, dur 41.407 us */
    assert_int_equal(t->spans[0].ts_ns, 4458676983543183ULL);
    assert_int_equal(t->spans[0].dur_ns, 41407);
    assert_int_equal(t->spans[0].stream, 7);
    check_steps(t, per_step);
    kineto_free(t);
}

/* Each step of the NCCL trace through the summarizer: every kernel lands in
 * exactly one cluster of its (name, stream) group. */
static void test_real_summarized(void **state)
{
    struct kineto_trace *t;
    struct summarizer *s;

    if (!data_dir[0])
        skip();
    t = load_real("nccl_parser_config__nccl_data.json.gz");
    s = summarizer_new(NULL);
    assert_non_null(s);
    for (size_t k = 0; k < t->n_steps; k++) {
        Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;
        uint64_t in_clusters = 0;

        for (size_t i = 0; i < t->n_spans; i++)
            if (t->spans[i].step == (int32_t)k)
                assert_int_equal(summarizer_add(s, t->name_ids[t->spans[i].name],
                                                t->spans[i].stream, t->spans[i].dur_ns),
                                 0);
        assert_int_equal(summarizer_finish(s, &rec), 0);
        assert_int_equal(rec.kernel_events, 900);
        assert_int_equal(rec.n_kernels, 70); /* 70 names, each on one stream */
        for (size_t g = 0; g < rec.n_kernels; g++)
            for (size_t c = 0; c < rec.kernels[g]->n_clusters; c++)
                in_clusters += rec.kernels[g]->clusters[c]->count;
        assert_int_equal(in_clusters, 900);
        summarizer_free_groups(&rec);
    }
    summarizer_free(s);
    kineto_free(t);
}

/* The work ids of one step's groups (name, stream) into ids, by group order
 * (name_id, stream); returns the groups. With bump, one kernel of the step
 * gets another shape. */
static size_t step_work_ids(const struct kineto_trace *t, size_t k, uint32_t *ids, size_t cap,
                            bool bump)
{
    struct summarizer *s = summarizer_new(NULL);
    Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;
    size_t n, shaped = 0;

    assert_non_null(s);
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].step == (int32_t)k) {
            uint32_t shape = t->spans[i].shape;
            shaped += shape != 0;
            if (bump && shaped == 1)
                shape ^= 1;
            assert_int_equal(summarizer_add_shape(s, t->name_ids[t->spans[i].name],
                                                  t->spans[i].stream, t->spans[i].dur_ns, shape),
                             0);
        }
    assert_true(shaped > 0);
    assert_int_equal(summarizer_finish(s, &rec), 0);
    n = rec.n_kernels < cap ? rec.n_kernels : cap;
    for (size_t g = 0; g < n; g++)
        ids[g] = rec.kernels[g]->work_id;
    summarizer_free_groups(&rec);
    summarizer_free(s);
    return n;
}

/* The real NCCL job's steps do the same work: every kernel group has the
 * same work id (launch shapes with their counts, args.grid/args.block) in
 * each step, though the kernels' durations differ; one kernel launched with
 * another shape changes its group's id and only that one. */
static void test_real_work_ids(void **state)
{
    uint32_t first[128], ids[128], bumped[128];
    struct kineto_trace *t;
    size_t n, differ = 0;

    if (!data_dir[0])
        skip();
    t = load_real("nccl_parser_config__nccl_data.json.gz");
    n = step_work_ids(t, 0, first, 128, false);
    assert_int_equal(n, 70);
    for (size_t g = 0; g < n; g++)
        assert_int_not_equal(first[g], 0);
    for (size_t k = 1; k < t->n_steps; k++) {
        assert_int_equal(step_work_ids(t, k, ids, 128, false), n);
        assert_memory_equal(ids, first, n * sizeof(ids[0]));
    }
    assert_int_equal(step_work_ids(t, 0, bumped, 128, true), n);
    for (size_t g = 0; g < n; g++)
        differ += bumped[g] != first[g];
    assert_int_equal(differ, 1);
    kineto_free(t);
}

/* A real trace cut anywhere is rejected as not JSON, never half-read. */
static void test_real_truncated(void **state)
{
    char path[PATH_MAX + 64], err[256];
    static char buf[4 << 20];
    struct kineto_trace *t;
    gzFile f;
    int len;

    if (!data_dir[0])
        skip();
    snprintf(path, sizeof(path), "%s/trace_filter__sampled_rank-1.json.gz", data_dir);
    f = gzopen(path, "rb");
    assert_non_null(f);
    len = gzread(f, buf, sizeof(buf));
    gzclose(f);
    assert_true(len > 1000000);
    for (int cut = 1; cut < 16; cut++) {
        size_t at = (size_t)len / 16 * (size_t)cut + (size_t)cut * 7;

        assert_int_equal(kineto_parse(buf, at, NULL, &t, err, sizeof(err)), -EBADMSG);
        assert_null(t);
    }
    assert_int_equal(kineto_parse(buf, (size_t)len, NULL, &t, err, sizeof(err)), 0);
    assert_int_equal(t->n_spans, 1104);
    kineto_free(t);
}

/* kineto_read of buf cut at byte at (through a file, as argusctl reads). */
static int read_cut(const char *buf, size_t at, struct kineto_trace **t, char *err, size_t errlen)
{
    char path[] = "/tmp/argus-kineto-cut-XXXXXX";
    int fd = mkstemp(path), rc;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, at), (ssize_t)at);
    close(fd);
    rc = kineto_read(path, NULL, t, err, errlen);
    unlink(path);
    return rc;
}

/* The byte where the n-th (0-based) kernel event of text begins to be cut. */
static size_t kernel_at(const char *text, size_t n)
{
    const char *p = text;

    for (size_t i = 0; (p = strstr(p + 1, "\"cat\": \"kernel\"")); i++)
        if (i == n)
            return (size_t)(p - text);
    fail_msg("fewer than %zu kernels", n + 1);
    return 0;
}

/* A real trace cut mid-way (JSON not closed): its last step, and the step
 * the cut fell in, go with their kernels, and err says what went. The file
 * holds 551's kernels in two runs around 552's. */
static void test_real_truncated_partial_step(void **state)
{
    char path[PATH_MAX + 64], err[512];
    static char buf[4 << 20];
    struct kineto_trace *full, *t;
    size_t run0 = 0;
    gzFile f;
    int len;

    if (!data_dir[0])
        skip();
    snprintf(path, sizeof(path), "%s/trace_filter__sampled_rank-0.json.gz", data_dir);
    f = gzopen(path, "rb");
    assert_non_null(f);
    len = gzread(f, buf, sizeof(buf) - 1);
    gzclose(f);
    assert_true(len > 1000000);
    buf[len] = 0;
    assert_int_equal(kineto_parse(buf, (size_t)len, NULL, &full, err, sizeof(err)), 0);
    assert_int_equal(full->n_steps, 2); /* 551 and 552 */
    while (full->spans[run0].step == 0)
        run0++;
    assert_int_equal(run0, 448);
    /* cut just after 552's first kernel: 552 goes, 551 stays with its first run */
    assert_int_equal(read_cut(buf, kernel_at(buf, run0 + 1), &t, err, sizeof(err)), -EBADMSG);
    assert_non_null(t);
    assert_false(t->complete);
    assert_int_equal(t->n_steps, 1);
    assert_int_equal(t->steps[0].number, 551);
    assert_int_equal(t->n_spans, run0);
    for (size_t i = 0; i < t->n_spans; i++)
        assert_int_equal(t->spans[i].step, 0);
    assert_int_equal(t->dropped_steps, 1);
    assert_int_equal(t->dropped_spans, 1);
    assert_non_null(strstr(err, "unexpected end of input"));
    size_t ann1 = 0;
    for (size_t i = 0; i < full->n_annotations; i++)
        ann1 += full->annotations[i].step == 1;
    assert_true(ann1 > 0);
    assert_int_equal(t->dropped_annotations, ann1);
    for (size_t i = 0; i < t->n_annotations; i++)
        assert_true(t->annotations[i].step <= 0);
    char want[160];
    snprintf(want, sizeof(want),
             "; dropped the partial step 552 (1 kernels, %zu annotations); the steps kept may "
             "still miss kernels the file held after the cut",
             ann1);
    assert_non_null(strstr(err, want));
    kineto_free(t);
    /* cut inside either run of 551: 551 (where it was cut) and 552 (last) go */
    size_t cuts[2] = {run0 / 2, full->n_spans - 60};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(read_cut(buf, kernel_at(buf, cuts[k]), &t, err, sizeof(err)), -EBADMSG);
        assert_non_null(t);
        assert_int_equal(full->spans[cuts[k] - 1].step, 0);
        assert_int_equal(t->n_steps, 0);
        assert_int_equal(t->n_spans, 0);
        assert_int_equal(t->dropped_steps, 2);
        assert_int_equal(t->dropped_spans, cuts[k]);
        assert_non_null(strstr(err, "dropped the partial steps 551 and 552"));
        kineto_free(t);
    }
    kineto_free(full);
}

static int parse_str(const char *json, const struct kineto_limits *l, struct kineto_trace **t,
                     char *err, size_t errlen)
{
    return kineto_parse(json, strlen(json), l, t, err, errlen);
}

/* A kernel launched inside step 7 that runs after it ended still belongs to
 * step 7; one without dur is skipped; a bad step name is ignored. */
static void test_synthetic_steps(void **state)
{
    const char *json =
        "{\"distributedInfo\": {\"rank\": 3, \"world_size\": 8}, \"traceEvents\": ["
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#7\",\"ts\":100,"
        "\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"ProfilerStep#8\",\"ts\":150,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#x\",\"ts\":0,"
        "\"dur\":999},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":140,"
        "\"dur\":2,\"args\":{\"correlation\":11}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":160.5,\"dur\":3.25,"
        "\"args\":{\"stream\":7,\"device\":2,\"correlation\":11}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":170,\"dur\":1,"
        "\"args\":{\"stream\":8}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nodur\",\"ts\":170},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"late\",\"ts\":900,\"dur\":1},"
        "{\"ph\":\"i\",\"cat\":\"kernel\",\"name\":\"instant\",\"ts\":120},"
        "42]}";
    struct kineto_trace *t;
    char err[128];

    assert_int_equal(parse_str(json, NULL, &t, err, sizeof(err)), 0);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->world_size, 8);
    assert_int_equal(t->n_steps, 2);
    assert_int_equal(t->n_spans, 3);
    assert_int_equal(t->n_names, 2);
    assert_int_equal(t->skipped, 1);
    assert_int_equal(t->spans[0].ts_ns, 160500);
    assert_int_equal(t->spans[0].dur_ns, 3250);
    assert_int_equal(t->spans[0].stream, 7);
    assert_int_equal(t->spans[0].device, 2);
    assert_int_equal(t->spans[0].step, 0); /* launched at 140, inside step 7 */
    assert_int_equal(t->spans[1].step, 1); /* no launch: its own start, step 8 */
    assert_int_equal(t->spans[1].device, -1);
    assert_int_equal(t->spans[1].name, t->spans[0].name);
    assert_int_equal(t->spans[2].step, -1);
    kineto_free(t);
}

static void expect_error(const char *json, const struct kineto_limits *l, int code,
                         const char *words)
{
    struct kineto_trace *t = (void *)1;
    char err[256] = "";

    assert_int_equal(parse_str(json, l, &t, err, sizeof(err)), code);
    assert_null(t);
    if (!strstr(err, words))
        print_message("error was: %s\n", err);
    assert_non_null(strstr(err, words));
}

static void test_bad_input(void **state)
{
    struct kineto_limits l;
    char long_name[200];

    expect_error("", NULL, -EBADMSG, "not JSON");
    expect_error("this is not json", NULL, -EBADMSG, "not JSON");
    expect_error("{\"traceEvents\": [", NULL, -EBADMSG, "not JSON");
    expect_error("[1, 2]", NULL, -EBADMSG, "not a JSON object");
    expect_error("{\"schemaVersion\": 1}", NULL, -EINVAL, "no traceEvents");
    expect_error("{\"traceEvents\": {}}", NULL, -EINVAL, "no traceEvents");

    kineto_limits_default(&l);
    l.max_events = 1;
    expect_error("{\"traceEvents\": [1, 2]}", &l, -E2BIG, "2 trace events");
    kineto_limits_default(&l);
    l.max_bytes = 10;
    expect_error("{\"traceEvents\": []}", &l, -EFBIG, "limit 10");
    kineto_limits_default(&l);
    l.max_names = 1;
    expect_error("{\"traceEvents\": ["
                 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"a\",\"ts\":1,\"dur\":1},"
                 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\",\"ts\":1,\"dur\":1}]}",
                 &l, -E2BIG, "distinct kernel names");
    kineto_limits_default(&l);
    l.max_name_len = 50;
    memset(long_name, 'k', sizeof(long_name));
    long_name[100] = 0;
    char json[512];
    snprintf(json, sizeof(json),
             "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"ts\":1,"
             "\"dur\":1}]}",
             long_name);
    expect_error(json, &l, -E2BIG, "kernel name of 100 bytes");
}

/* The same trace from a plain and a gzip'd file; a missing file. */
static void test_load_files(void **state)
{
    const char *json = "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
                       "\"ts\":5,\"dur\":2,\"args\":{\"stream\":3}}]}";
    char plain[] = "/tmp/argus_kineto_XXXXXX", gz[] = "/tmp/argus_kineto_gz_XXXXXX";
    char err[256];
    struct kineto_trace *t;
    int fd = mkstemp(plain);
    gzFile g;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    fd = mkstemp(gz);
    assert_true(fd >= 0);
    g = gzdopen(fd, "wb");
    assert_int_equal(gzwrite(g, json, (unsigned)strlen(json)), (int)strlen(json));
    gzclose(g);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kineto_load(i ? gz : plain, NULL, &t, err, sizeof(err)), 0);
        assert_int_equal(t->n_spans, 1);
        assert_int_equal(t->spans[0].ts_ns, 5000);
        assert_int_equal(t->spans[0].stream, 3);
        kineto_free(t);
    }
    unlink(plain);
    unlink(gz);
    assert_int_equal(kineto_load("/nonexistent/trace.json.gz", NULL, &t, err, sizeof(err)),
                     -ENOENT);
    assert_null(t);
    assert_non_null(strstr(err, "cannot open"));
    kineto_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_rank0),
        cmocka_unit_test(test_real_rank1),
        cmocka_unit_test(test_real_nccl),
        cmocka_unit_test(test_real_summarized),
        cmocka_unit_test(test_real_work_ids),
        cmocka_unit_test(test_real_truncated),
        cmocka_unit_test(test_real_truncated_partial_step),
        cmocka_unit_test(test_synthetic_steps),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_load_files),
    };

    if (find_data_dir() < 0) {
        data_dir[0] = 0;
        printf("skip: real Kineto traces not found (REPO/../shared/data/kineto or "
               "$ARGUS_KINETO_DIR): the real-trace tests are skipped\n");
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
