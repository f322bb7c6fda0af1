/* Benchmark of the RocksDB store: ingest rate in rank-steps/s for batches of
 * 8 ranks x 8 steps of realistic step records (30 kernel groups, 6 phases,
 * 4 collectives, host counters), with sync=false and with sync=true, and the
 * bytes on disk per rank-step after a manual compaction, then the rate of a
 * scan reading every record back. Only the time in store_ingest counts
 * (building the records does not).
 *
 *   build/bench/bench_store [batches] [dir]   (default 1500, a temp dir under /tmp)
 *   build/bench/bench_store --compact DIR N   (a store a collector left: compact
 *                                              it, print live SST bytes per rank-step
 *                                              for N rank-steps; bench_ingest.sh)
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "common/clock.h"

#define RANKS 8
#define STEPS 8
#define KERNELS 30
#define PHASES 6
#define COLLECTIVES 4

/* Storage for one batch; the pointers of the protobuf structs point into it. */
struct bench_batch {
    Argus__V1__Batch b;
    Argus__V1__StepRecord rec[RANKS * STEPS], *rec_p[RANKS * STEPS];
    Argus__V1__Phase ph[RANKS * STEPS][PHASES], *ph_p[RANKS * STEPS][PHASES];
    Argus__V1__KernelGroup kg[RANKS * STEPS][KERNELS], *kg_p[RANKS * STEPS][KERNELS];
    Argus__V1__Cluster cl[RANKS * STEPS][KERNELS][2], *cl_p[RANKS * STEPS][KERNELS][2];
    Argus__V1__Collective co[RANKS * STEPS][COLLECTIVES], *co_p[RANKS * STEPS][COLLECTIVES];
    Argus__V1__HostCounters host[RANKS * STEPS];
};

static uint64_t rng = 88172645463325252ULL;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* v with +-(pct)% noise */
static uint64_t noisy(uint64_t v, unsigned pct)
{
    uint64_t span = v * pct / 100 + 1;

    return v - span / 2 + next_rand() % span;
}

static void fill_cluster(Argus__V1__Cluster *c, uint64_t base_ns)
{
    argus__v1__cluster__init(c);
    c->count = (uint32_t)(1 + next_rand() % 64);
    c->p50_ns = noisy(base_ns, 10);
    c->p99_ns = noisy(base_ns * 13 / 10, 10);
    c->min_ns = c->p50_ns * 8 / 10;
    c->max_ns = c->p99_ns + noisy(base_ns / 10, 50);
    c->sum_ns = c->p50_ns * c->count;
}

static void fill_record(struct bench_batch *bb, size_t i, uint32_t rank, uint64_t step,
                        uint64_t start)
{
    Argus__V1__StepRecord *r = &bb->rec[i];

    argus__v1__step_record__init(r);
    r->job = "bench-job-0001";
    r->rank = rank;
    r->step = step;
    r->start_unix_ns = start + noisy(2000000, 50);
    r->duration_ns = noisy(480 * NSEC_PER_MSEC, 4);
    r->sampled = 1;
    r->source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_NVTX;
    r->kernel_events = noisy(4000, 5);
    for (int p = 0; p < PHASES; p++) {
        argus__v1__phase__init(&bb->ph[i][p]);
        bb->ph[i][p].name_id = 0x9e3779b97f4a7c15ULL * (p + 1);
        bb->ph[i][p].start_ns = (uint64_t)p * 80 * NSEC_PER_MSEC + noisy(1000000, 20);
        bb->ph[i][p].duration_ns = noisy(75 * NSEC_PER_MSEC, 6);
        bb->ph[i][p].stream = p < 4 ? 7 : 13;
        bb->ph_p[i][p] = &bb->ph[i][p];
    }
    r->n_phases = PHASES;
    r->phases = bb->ph_p[i];
    for (int k = 0; k < KERNELS; k++) {
        int nc = 1 + (k % 3 == 0);
        argus__v1__kernel_group__init(&bb->kg[i][k]);
        bb->kg[i][k].name_id = 0xcbf29ce484222325ULL ^ (0x100000001b3ULL * (k + 17));
        bb->kg[i][k].stream = k < 25 ? 7 : 13;
        for (int c = 0; c < nc; c++) {
            fill_cluster(&bb->cl[i][k][c], (uint64_t)(20000 + k * 3000) << c);
            bb->cl_p[i][k][c] = &bb->cl[i][k][c];
        }
        bb->kg[i][k].n_clusters = (size_t)nc;
        bb->kg[i][k].clusters = bb->cl_p[i][k];
        bb->kg_p[i][k] = &bb->kg[i][k];
    }
    r->n_kernels = KERNELS;
    r->kernels = bb->kg_p[i];
    for (int c = 0; c < COLLECTIVES; c++) {
        Argus__V1__Collective *co = &bb->co[i][c];
        argus__v1__collective__init(co);
        co->seq = step * COLLECTIVES + c;
        co->name_id = 0x51ed270b27ULL + c;
        co->bytes = 64u << 20;
        co->host_arrival_unix_ns =
            start + (uint64_t)(300 + c * 40) * NSEC_PER_MSEC + noisy(500000, 80);
        co->gpu_start_unix_ns = co->host_arrival_unix_ns + noisy(200000, 50);
        co->gpu_end_unix_ns = co->gpu_start_unix_ns + noisy(30 * NSEC_PER_MSEC, 5);
        co->stream = 13;
        co->comm_id = 0xabcdef12345ULL;
        bb->co_p[i][c] = co;
    }
    r->n_collectives = COLLECTIVES;
    r->collectives = bb->co_p[i];
    argus__v1__host_counters__init(&bb->host[i]);
    bb->host[i].off_cpu_ns = noisy(3 * NSEC_PER_MSEC, 50);
    bb->host[i].runq_ns = noisy(200000, 50);
    bb->host[i].sync_wait_ns = noisy(40 * NSEC_PER_MSEC, 20);
    bb->host[i].launches = noisy(4000, 5);
    r->host = &bb->host[i];
    bb->rec_p[i] = r;
}

/* Batch seq of one agent: its 8 ranks, steps [8 (seq-1), 8 seq). */
static void fill_batch(struct bench_batch *bb, uint32_t agent, uint64_t seq, uint64_t t0)
{
    argus__v1__batch__init(&bb->b);
    bb->b.agent_id = "bench-node";
    bb->b.epoch = agent + 1;
    bb->b.seq = seq;
    for (int k = 0; k < STEPS; k++) {
        uint64_t step = (seq - 1) * STEPS + k;
        for (int r = 0; r < RANKS; r++)
            fill_record(bb, (size_t)k * RANKS + r, agent * RANKS + r, step,
                        t0 + step * 480 * NSEC_PER_MSEC);
    }
    bb->b.n_steps = RANKS * STEPS;
    bb->b.steps = bb->rec_p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int count_one(void *ctx, const void *v, size_t len)
{
    (void)v;
    *(uint64_t *)ctx += len;
    return 0;
}

/* Read back every record of the job (a query's scan), timed. */
static void read_all(struct store *s, int n)
{
    uint64_t bytes = 0, t = clock_mono_ns();

    store_scan_steps(s, "bench-job-0001", -1, 0, 0, count_one, &bytes);
    printf("store scan: %.0f rank-steps/s read (%.2f s, %.0f B per record handed out)\n",
           (double)n * RANKS * STEPS / ((double)(clock_mono_ns() - t) / 1e9),
           (double)(clock_mono_ns() - t) / 1e9, (double)bytes / ((double)n * RANKS * STEPS));
}

/* Ingest n batches into a fresh store; prints the rate (and bytes on disk). */
static int run(const char *dir, bool sync, int n, struct bench_batch *bb)
{
    struct store_options o = {.dir = dir, .sync = sync};
    struct store_stats st;
    struct store *s;
    char err[256];
    uint64_t t, busy = 0, packed = 0, t0 = clock_real_ns();
    double secs;

    if (store_open(&o, &s, err, sizeof(err))) {
        fprintf(stderr, "bench_store: %s\n", err);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        int rc;

        fill_batch(bb, 0, (uint64_t)i + 1, t0); /* not timed */
        if (i == 0)
            packed = argus__v1__step_record__get_packed_size(bb->rec_p[0]);
        t = clock_mono_ns();
        rc = store_ingest(s, &bb->b, err, sizeof(err));
        busy += clock_mono_ns() - t;
        if (rc != STORE_INGEST_WRITTEN) {
            fprintf(stderr, "bench_store: ingest: %s\n", err);
            store_close(s);
            return 1;
        }
    }
    secs = (double)busy / 1e9;
    store_get_stats(s, &st);
    printf("store ingest sync=%d: %.0f rank-steps/s (%d batches of %dx%d, %.2f s, "
           "record %zu B packed, rocksdb_write mean %.0f us max %.0f us)\n",
           sync, (double)n * RANKS * STEPS / secs, n, RANKS, STEPS, secs, (size_t)packed,
           (double)st.write_ns_total / n / 1e3, (double)st.write_ns_max / 1e3);
    if (!sync) {
        t = clock_mono_ns();
        store_compact(s);
        store_get_stats(s, &st);
        printf("store on disk after compaction: %.0f B per rank-step (%.1f MB live SST, "
               "compaction %.2f s)\n",
               (double)st.live_sst_bytes / ((double)n * RANKS * STEPS),
               (double)st.live_sst_bytes / 1e6, (double)(clock_mono_ns() - t) / 1e9);
        read_all(s, n);
    }
    store_close(s);
    return 0;
}

/* Compact the store in dir fully and print its live SST bytes per rank-step. */
static int compact_only(const char *dir, double rank_steps)
{
    struct store_options o = {.dir = dir};
    struct store_stats st;
    struct store *s;
    char err[256];
    uint64_t t = clock_mono_ns();

    if (store_open(&o, &s, err, sizeof(err))) {
        fprintf(stderr, "bench_store: %s\n", err);
        return 1;
    }
    store_compact(s);
    store_get_stats(s, &st);
    printf("store after a full compaction: %.0f B per rank-step (%.1f MB live SST, compaction "
           "%.2f s)\n",
           (double)st.live_sst_bytes / rank_steps, (double)st.live_sst_bytes / 1e6,
           (double)(clock_mono_ns() - t) / 1e9);
    store_close(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--compact") == 0 && atof(argv[3]) > 0)
        return compact_only(argv[2], atof(argv[3]));
    int n = argc > 1 ? atoi(argv[1]) : 1500;
    char tmp[] = "/tmp/argus-bench-store-XXXXXX", sub[64];
    const char *dir = argc > 2 ? argv[2] : mkdtemp(tmp);
    struct bench_batch *bb = calloc(1, sizeof(*bb));
    int rc;

    if (!dir || !bb || n <= 0)
        return 1;
    snprintf(sub, sizeof(sub), "%s/nosync", dir);
    rc = run(sub, false, n, bb);
    snprintf(sub, sizeof(sub), "%s/sync", dir);
    if (rc == 0)
        rc = run(sub, true, n / 5 > 0 ? n / 5 : 1, bb);
    if (argc <= 2)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(bb);
    return rc;
}
