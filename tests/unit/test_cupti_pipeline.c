/* libargus-cupti.so end to end against the CUPTI test double: a stand-in CUDA
 * app (build/tests/cupti/cupti-app) calls InitializeInjection as the driver
 * does, the double replays Kineto traces or generates records, and this test
 * is the agent: source_cupti in process, every event recorded and checked
 * against an oracle computed here from the same trace files.
 *
 * test-cpu: all: it checks 1M records/s with no drops and a wall-clock bound,
 * which a test beside it on a 2-core machine can break. */
#if __has_include(<cupti.h>)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>

#include <cmocka.h>
#include <json-c/json.h>
#include <zlib.h>

#include "tests/cupti/harness.h"

#define KINETO_DIR "../shared/data/kineto"
#define SEC UINT64_C(1000000000)

static char sock[128];

static int setup(void **state)
{
    snprintf(sock, sizeof(sock), "/tmp/argus-cupti-test-%d.sock", (int)getpid());
    return 0;
}

/* --- oracle: the trace read independently of the double ------------------ */

struct o_gpu {
    uint32_t corr, stream;
    uint64_t ts, dur;
    int kind; /* 0 kernel, 1 memcpy, 2 memset */
    const char *name;
};

struct o_api {
    uint32_t corr, tid;
    uint64_t ts;
};

struct o_range {
    const char *name;
    uint32_t tid;
    uint64_t ts, end;
};

struct oracle {
    json_object *root;
    struct o_gpu *gpu;
    struct o_api *api;
    struct o_range *rng;
    size_t ngpu, napi, nrng;
};

static uint64_t o_ns(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? (uint64_t)llround(json_object_get_double(v) * 1e3)
                                               : 0;
}

static int64_t o_int(json_object *o, const char *k)
{
    json_object *v;
    return o && json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static int o_load(struct oracle *o, const char *path)
{
    gzFile f = gzopen(path, "rb");
    static char buf[64 << 20];
    int n = f ? gzread(f, buf, sizeof(buf) - 1) : -1;
    json_object *evs, *v, *args;
    size_t cnt;

    if (f)
        gzclose(f);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    memset(o, 0, sizeof(*o));
    o->root = json_tokener_parse(buf);
    if (!o->root || !json_object_object_get_ex(o->root, "traceEvents", &evs))
        return -1;
    cnt = json_object_array_length(evs);
    o->gpu = calloc(cnt, sizeof(*o->gpu));
    o->api = calloc(cnt, sizeof(*o->api));
    o->rng = calloc(cnt, sizeof(*o->rng));
    for (size_t i = 0; i < cnt; i++) {
        json_object *e = json_object_array_get_idx(evs, i);
        const char *cat, *name;
        if (!json_object_object_get_ex(e, "cat", &v) || !(cat = json_object_get_string(v)) ||
            !json_object_object_get_ex(e, "name", &v) || !(name = json_object_get_string(v)))
            continue;
        args = NULL;
        json_object_object_get_ex(e, "args", &args);
        int kind = !strcmp(cat, "kernel")       ? 0
                   : !strcmp(cat, "gpu_memcpy") ? 1
                   : !strcmp(cat, "gpu_memset") ? 2
                                                : -1;
        if (kind >= 0)
            o->gpu[o->ngpu++] = (struct o_gpu){(uint32_t)o_int(args, "correlation"),
                                               (uint32_t)o_int(args, "stream"),
                                               o_ns(e, "ts"),
                                               o_ns(e, "dur"),
                                               kind,
                                               name};
        else if (!strcmp(cat, "cuda_runtime"))
            o->api[o->napi++] = (struct o_api){(uint32_t)o_int(args, "correlation"),
                                               (uint32_t)o_int(e, "tid"), o_ns(e, "ts")};
        else if (!strcmp(cat, "user_annotation") && cupti_ring_is_phase(name))
            o->rng[o->nrng++] = (struct o_range){name, (uint32_t)o_int(e, "tid"), o_ns(e, "ts"),
                                                 o_ns(e, "ts") + o_ns(e, "dur")};
    }
    return 0;
}

static void o_free(struct oracle *o)
{
    json_object_put(o->root);
    free(o->gpu);
    free(o->api);
    free(o->rng);
}

/* GPU time of range r: kernels launched inside it on its thread, on the
 * stream with the most kernel time, first start to last end. 0 if none. */
static uint64_t o_project(const struct oracle *o, const struct o_range *r, uint32_t *stream)
{
    uint32_t streams[64] = {0};
    uint64_t busy[64] = {0}, first[64], last[64] = {0}, best = 0;
    int ns = 0, bi = -1;

    for (size_t a = 0; a < o->napi; a++) {
        if (o->api[a].tid != r->tid || o->api[a].ts < r->ts || o->api[a].ts > r->end)
            continue;
        for (size_t g = 0; g < o->ngpu; g++) {
            const struct o_gpu *k = &o->gpu[g];
            int i;
            if (k->corr != o->api[a].corr)
                continue;
            for (i = 0; i < ns && streams[i] != k->stream; i++)
                ;
            if (i == ns) {
                streams[ns++] = k->stream;
                first[i] = k->ts;
            }
            busy[i] += k->dur;
            first[i] = k->ts < first[i] ? k->ts : first[i];
            last[i] = k->ts + k->dur > last[i] ? k->ts + k->dur : last[i];
        }
    }
    for (int i = 0; i < ns; i++)
        if (bi < 0 || busy[i] > busy[bi])
            bi = i;
    if (bi >= 0) {
        best = last[bi] - first[bi];
        *stream = streams[bi];
    }
    return best;
}

/* --- replay ------------------------------------------------------------- */

static void replay_check(const char *file)
{
    char path[256];
    struct oracle o = {0};
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    void *src;
    size_t phases_expected = 0, matched = 0;

    snprintf(path, sizeof(path), "%s/%s", KINETO_DIR, file);
    if (access(path, R_OK) || o_load(&o, path) < 0) {
        printf("skip: %s not readable\n", path);
        free(h);
        skip();
    }
    src = h_source(h, sock);
    assert_non_null(src);
    char *args[] = {"replay", path, NULL};
    char *env[] = {"RANK=0", "ARGUS_AGENT_SOCKET=", NULL};
    char envsock[200];
    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    env[1] = envsock;
    int err = h_app_start(&app, args, env);
    if (err == -ENOENT) {
        printf("skip: build/lib/libargus-cupti.so or the double is not built\n");
        skip();
    }
    assert_int_equal(err, 0);
    assert_int_equal(h_app_wait(&app, src, 20 * SEC), 0);

    /* every GPU record, by correlation: name, stream, duration */
    assert_int_equal(h->nk, o.ngpu);
    for (size_t i = 0; i < o.ngpu; i++) {
        const struct o_gpu *g = &o.gpu[i];
        size_t j;
        for (j = 0; j < h->nk && !(h->k[j].corr == g->corr && h->k[j].kind == (uint32_t)g->kind);
             j++)
            ;
        assert_true(j < h->nk);
        assert_int_equal(h->k[j].stream, g->stream);
        assert_int_equal(h->k[j].dur, g->dur);
        if (g->kind == 0)
            assert_string_equal(h_name(h, h->k[j].name_id), g->name);
        matched++;
    }
    /* every phase with kernels, projected onto the GPU */
    for (size_t r = 0; r < o.nrng; r++) {
        uint32_t stream = 0;
        uint64_t dur = o_project(&o, &o.rng[r], &stream);
        bool found = false;
        if (!dur)
            continue;
        phases_expected++;
        for (size_t p = 0; p < h->np && !found; p++)
            found = h->p[p].dur == dur && h->p[p].stream == stream &&
                    strcmp(h_name(h, h->p[p].name_id), o.rng[r].name) == 0;
        printf("phase %-20s stream %u gpu %" PRIu64 " ns %s\n", o.rng[r].name, stream, dur,
               found ? "ok" : "MISSING");
        assert_true(found);
    }
    assert_int_equal(h->np, phases_expected);
    assert_true(h->steps >= 1);
    printf("%s: %zu GPU records matched, %zu phases\n", file, matched, h->np);
    source_cupti_ops.destroy(src);
    o_free(&o);
    h_sink_free(h);
    free(h);
}

static void test_replay_rank0(void **state)
{
    replay_check("trace_filter__sampled_rank-0.json.gz");
}

static void test_replay_rank1(void **state)
{
    replay_check("trace_filter__sampled_rank-1.json.gz");
}

/* --- generated load ------------------------------------------------------ */

/* Run the app in mode args with env extras against a fresh source. */
static int run_gen(struct h_sink *h, struct h_app *app, char **args, const char *extra1,
                   const char *extra2)
{
    static char envsock[200];
    char *env[] = {"RANK=0", envsock, (char *)extra1, (char *)extra2, NULL};
    void *src = h_source(h, sock);
    int err, rc;

    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    if (!extra1)
        env[2] = NULL;
    if (!extra2)
        env[3] = NULL;
    assert_non_null(src);
    err = h_app_start(app, args, env);
    if (err == -ENOENT) {
        source_cupti_ops.destroy(src);
        printf("skip: the library or the double is not built\n");
        skip();
    }
    assert_int_equal(err, 0);
    rc = h_app_wait(app, src, 30 * SEC);
    source_cupti_ops.destroy(src);
    return rc;
}

static void test_rate_1m_default_pool_no_drops(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char *args[] = {"gen", "1000000", "1000000", NULL};

    assert_int_equal(run_gen(h, &app, args, NULL, NULL), 0);
    printf("%s", app.text);
    assert_int_equal(h_stat(&app, "produced"), 1000000);
    assert_int_equal(h_stat(&app, "dropped"), 0);
    assert_int_equal(h->nk, 500000);
    for (int i = 0; i < CUPTI_DROP_REASONS; i++)
        assert_int_equal(h->drops[i], 0);
    /* 1 s of records took about 1 s: the app was never held up */
    assert_true(h_stat(&app, "wall_ms") < 1500);
    h_sink_free(h);
    free(h);
}

static void test_tiny_pool_drops_counted_exactly(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char *args[] = {"gen", "1000000", "400000", NULL};
    uint64_t produced, dropped, kernels;

    assert_int_equal(run_gen(h, &app, args, "ARGUS_CUPTI_POOL=1", "ARGUS_CUPTI_BUFSZ=4096"), 0);
    printf("%s", app.text);
    produced = h_stat(&app, "produced");
    dropped = h_stat(&app, "dropped");
    kernels = h_stat(&app, "kernels");
    assert_int_equal(produced + dropped, 400000);
    assert_true(dropped > 0);
    /* every record CUPTI could not place is reported, and nothing else lost */
    assert_int_equal(h->drops[CUPTI_DROP_NO_BUFFER], dropped);
    assert_int_equal(h->drops[CUPTI_DROP_RING_FULL], 0);
    assert_int_equal(h->nk, kernels);
    /* the callbacks never wait for the worker */
    printf("callbacks %" PRIu64 " p99 %" PRIu64 " ns max %" PRIu64 " ns\n",
           h_stat(&app, "callbacks"), h_stat(&app, "cb_p99_ns"), h_stat(&app, "cb_max_ns"));
    assert_true(h_stat(&app, "cb_p99_ns") < 50000);
    assert_true(h_stat(&app, "cb_max_ns") < 20000000);
    h_sink_free(h);
    free(h);
}

static void test_agent_down_then_up(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char envsock[200];
    char *args[] = {"gen", "200000", "300000", NULL}; /* 1.5 s */
    char *env[] = {"RANK=0", envsock, "ARGUS_CUPTI_RECONNECT_MS=20", NULL};
    void *src;
    uint64_t t0 = clock_mono_ns();
    int rc;

    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    unlink(sock);
    if (h_app_start(&app, args, env) == -ENOENT) {
        printf("skip: the library or the double is not built\n");
        skip();
    }
    usleep(300000); /* agent down */
    src = h_source(h, sock);
    assert_non_null(src);
    h_pump(src, 300000000);        /* up */
    source_cupti_ops.destroy(src); /* down again */
    usleep(300000);
    src = h_source(h, sock); /* and up */
    rc = h_app_wait(&app, src, 20 * SEC);
    assert_int_equal(rc, 0);
    struct source_cupti_stats st;
    source_cupti_get_stats(src, &st);
    printf("%sreconnected clients=%" PRIu64 " kernels=%zu no_agent=%" PRIu64 " wall %" PRIu64
           " ms\n",
           app.text, st.clients, h->nk, h->drops[CUPTI_DROP_NO_AGENT],
           (clock_mono_ns() - t0) / 1000000);
    assert_int_equal(st.clients, 1); /* the second agent got a hello too */
    assert_true(st.kernels > 0);
    assert_true(h->drops[CUPTI_DROP_NO_AGENT] > 0);
    assert_int_equal(h_stat(&app, "dropped"), 0);
    assert_true(h_stat(&app, "wall_ms") < 2500); /* never blocked on the absent agent */
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

static void test_non_rank_skipped(void **state)
{
    struct h_app app;
    char *args[] = {"gen", "0", "100", NULL};
    char *no_rank[] = {"RANK=", "LOCAL_RANK=", NULL};
    char *denied[] = {"RANK=0", "ARGUS_CUPTI_DENY=python3,cupti-app", NULL};
    char *rank[] = {"LOCAL_RANK=1", "ARGUS_AGENT_SOCKET=/nonexistent/x.sock", NULL};

    if (h_app_start(&app, args, no_rank) == -ENOENT) {
        printf("skip: the library or the double is not built\n");
        skip();
    }
    assert_int_equal(h_app_wait(&app, NULL, 10 * SEC), 0);
    assert_non_null(strstr(app.text, "skipped ("));
    assert_int_equal(h_app_start(&app, args, denied), 0);
    assert_int_equal(h_app_wait(&app, NULL, 10 * SEC), 0);
    assert_non_null(strstr(app.text, "skipped ("));
    assert_int_equal(h_app_start(&app, args, rank), 0); /* a rank: traced */
    assert_int_equal(h_app_wait(&app, NULL, 10 * SEC), 0);
    printf("%s", app.text);
    assert_null(strstr(app.text, "skipped ("));
    assert_int_equal(h_stat(&app, "produced"), 100);
    /* NVTX is pointed at the CUPTI argus loaded (here the double) */
    assert_non_null(strstr(app.text, "libcupti-double.so\n"));
}

/* A node without a GPU: the real libcupti.so.13 refuses; the app runs on. */
static void test_real_cupti_without_gpu_fails_cleanly(void **state)
{
    struct h_app app;
    char *args[] = {"gen", "0", "10", NULL};
    char *env[] = {"RANK=0", "ARGUS_CUPTI_LIB=/usr/local/cuda/lib64/libcupti.so.13",
                   "ARGUS_AGENT_SOCKET=/nonexistent/x.sock", NULL};

    if (access("/usr/local/cuda/lib64/libcupti.so.13", R_OK) || !access("/dev/nvidiactl", F_OK)) {
        printf("skip: needs the real libcupti.so.13 and no GPU\n");
        skip();
    }
    if (h_app_start(&app, args, env) == -ENOENT) {
        printf("skip: the library or the double is not built\n");
        skip();
    }
    assert_int_equal(h_app_wait(&app, NULL, 20 * SEC), 0);
    printf("%s", app.text);
    assert_non_null(strstr(app.text, "argus-cupti: CUPTI refused"));
    assert_non_null(strstr(app.text, "GPU tracing off"));
}

static void test_foreign_client_step_aside(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char envsock[200];
    char *args[] = {"foreign", "100000", "100000", NULL}; /* 1 s */
    char *env[] = {"RANK=0", envsock, "ARGUS_CUPTI_PROBE_MS=20", NULL};
    void *src = h_source(h, sock);
    struct source_cupti_stats st;

    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    assert_non_null(src);
    if (h_app_start(&app, args, env) == -ENOENT) {
        printf("skip: the library or the double is not built\n");
        skip();
    }
    assert_int_equal(h_app_wait(&app, src, 20 * SEC), 0);
    source_cupti_get_stats(src, &st);
    printf("%sstep_asides %" PRIu64 " kernels at agent %zu\n", app.text, st.step_asides, h->nk);
    assert_non_null(strstr(app.text, "foreign untouched=1 foreign_got=1 back=1"));
    assert_int_equal(st.step_asides, 1);
    /* every kernel CUPTI gave argus arrived: before the other client and after */
    assert_int_equal(h->nk, h_stat(&app, "kernels"));
    assert_true(h_stat(&app, "foreign_records") > 0);
    assert_true(h->nk > 10000); /* 0.2 s before, about 0.3 s after */
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

static void test_sampling_time_window(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char envsock[200];
    char *args[] = {"gen", "400000", "400000", NULL}; /* 1 s, 200k kernels */
    char *env[] = {"RANK=0", envsock, NULL};
    void *src = h_source(h, sock);

    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    assert_non_null(src);
    assert_int_equal(source_cupti_set_sampling(src, CUPTI_SAMPLE_TIME, 100, 400), 0);
    if (h_app_start(&app, args, env) == -ENOENT) {
        printf("skip: the library or the double is not built\n");
        skip();
    }
    assert_int_equal(h_app_wait(&app, src, 20 * SEC), 0);
    printf("%skernels %zu of 200000 with 100 ms of every 400 ms\n", app.text, h->nk);
    assert_int_equal(h->nk, h_stat(&app, "kernels")); /* what was traced all arrived */
    assert_true(h->nk > 20000 && h->nk < 100000);     /* about a quarter */
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

static void test_forked_child_exits_cleanly(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char *args[] = {"fork", "0", "1000", NULL};

    assert_int_equal(run_gen(h, &app, args, NULL, NULL), 0);
    printf("%s", app.text);
    assert_non_null(strstr(app.text, "fork child_exit=0"));
    assert_int_equal(h->nk, 500); /* and the parent's records still arrive once */
    h_sink_free(h);
    free(h);
}

static void test_sampling_k_of_n_steps(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    struct h_app app;
    char envsock[200];
    char *args[] = {"steps", "400000", "400000", "20000", NULL}; /* 10 steps of 20k launches */
    char *env[] = {"RANK=0", envsock, NULL};
    void *src = h_source(h, sock);

    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    assert_non_null(src);
    assert_int_equal(source_cupti_set_sampling(src, CUPTI_SAMPLE_STEPS, 1, 2), 0);
    assert_int_equal(source_cupti_set_sampling(src, CUPTI_SAMPLE_STEPS, 3, 2), -EINVAL);
    if (h_app_start(&app, args, env) == -ENOENT) {
        printf("skip: the library or the double is not built\n");
        skip();
    }
    assert_int_equal(h_app_wait(&app, src, 20 * SEC), 0);
    printf("%ssteps %" PRIu64 " sampled %" PRIu64 " kernels %zu\n", app.text, h->steps,
           h->sampled_steps, h->nk);
    assert_int_equal(h->steps, 10);
    assert_true(h->sampled_steps >= 4 && h->sampled_steps <= 6);
    assert_true(h_stat(&app, "skipped") > 0);     /* unsampled steps cost CUPTI nothing */
    assert_true(h->nk > 50000 && h->nk < 150000); /* about 5 of 10 steps' 20k kernels */
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_replay_rank0, setup),
        cmocka_unit_test_setup(test_replay_rank1, setup),
        cmocka_unit_test_setup(test_rate_1m_default_pool_no_drops, setup),
        cmocka_unit_test_setup(test_tiny_pool_drops_counted_exactly, setup),
        cmocka_unit_test_setup(test_agent_down_then_up, setup),
        cmocka_unit_test_setup(test_non_rank_skipped, setup),
        cmocka_unit_test_setup(test_real_cupti_without_gpu_fails_cleanly, setup),
        cmocka_unit_test_setup(test_foreign_client_step_aside, setup),
        cmocka_unit_test_setup(test_forked_child_exits_cleanly, setup),
        cmocka_unit_test_setup(test_sampling_time_window, setup),
        cmocka_unit_test_setup(test_sampling_k_of_n_steps, setup),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
#include <stdio.h>
int main(void)
{
    printf("skip: no CUDA headers (cupti.h), the CUPTI library is not built\n");
    return 77;
}
#endif
