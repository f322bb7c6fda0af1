/* Benchmark of the collector's online diagnosis (collector/diag/diagnosis.h): a
 * healthy job of 10,240 ranks (1,280 agent streams of 8 ranks) and one of
 * 1,024 ranks (128 streams) fed through diagnosis_feed and diagnosis_tick as
 * the collector's diagnosis worker and main loop call them, with a real store
 * (reports, names) in a temp dir. The job runs at 10 steps/s; each stream
 * sends a batch every `per_batch` steps (the agent's batch.max_age), the
 * streams staggered over the batch period, the first batch of a stream with
 * its resources and names; a tick every simulated second, and 60 s of ticks
 * after the last batch so every step closes. Records are realistic
 * (tools/argus-sim/diag_scenario.h, TP=8): a pool of generated steps, reused
 * under new step numbers so that generating them is not what is measured.
 *
 * Prints, per job and batch size: us per record fed (feed and tick time over
 * records, all in), the same without the step closes (the CPU the engine
 * spent closing steps, diagnosis_stats.close_ns_total, taken out), ms per
 * closed step, and how the steps closed. Only the time in diagnosis_feed and
 * diagnosis_tick counts.
 *
 *   build/bench/bench_diag [steps [per_batch ...]]   (default 40 steps, batches of 1 and 10)
 *
 * BENCH_DIAG_RANKS=n runs only the job of n ranks (a multiple of 8), e.g.
 * under valgrind --tool=callgrind --toggle-collect=diagnosis_feed
 * --toggle-collect=diagnosis_tick for instruction counts that a loaded
 * machine does not disturb.
 */
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diagnosis.h"
#include "collector/store/store.h"
#include "common/clock.h"
#include "tools/argus-sim/diag_scenario.h"

#define SEC 1000000000ULL
#define MS 1000000ULL
/* Receive times are simulated, and in the future (2030) so that the feed lag
 * diagnosis measures (wall clock - receive time) is 0 and ticks see exactly
 * the simulated time, whatever the speed of the machine. */
#define BASE_NS (1900000000ULL * SEC)
#define STEP_NS (100 * MS) /* 10 steps/s */
#define PER_STREAM 8
#define POOL 4 /* distinct generated steps */
#define MAX_NAMES 256

struct bench_job {
    uint32_t ranks, streams, per_batch;
    struct diag_scn *scn;
    Argus__V1__StepRecord **pool[POOL]; /* [rank]: owned deep copies */
    Argus__V1__NameEntry names[MAX_NAMES], *names_p[MAX_NAMES];
    size_t n_names;
    Argus__V1__Resource *const *res; /* the generator's, by rank */
    char job[64];
    /* one batch being built: shallow copies of pool records */
    Argus__V1__StepRecord *rec;
    Argus__V1__StepRecord **rec_p;
    Argus__V1__Resource **res_p;
    uint32_t *order; /* streams in the order they send within a batch period */
};

struct bench_result {
    uint64_t feed_ns, tick_ns, records, batches;
    struct diagnosis_stats st;
};

static Argus__V1__StepRecord *copy_record(const Argus__V1__StepRecord *r)
{
    size_t n = argus__v1__step_record__get_packed_size(r);
    uint8_t *buf = malloc(n);
    Argus__V1__StepRecord *c = NULL;

    if (buf) {
        argus__v1__step_record__pack(r, buf);
        c = argus__v1__step_record__unpack(NULL, n, buf);
    }
    free(buf);
    return c;
}

static void add_name(struct bench_job *j, uint64_t id)
{
    for (size_t i = 0; i < j->n_names; i++)
        if (j->names[i].id == id)
            return;
    const char *name = diag_scn_name(j->scn, id);
    if (!name || j->n_names >= MAX_NAMES)
        return;
    Argus__V1__NameEntry *e = &j->names[j->n_names];
    argus__v1__name_entry__init(e);
    e->job = j->job;
    e->id = id;
    e->name = (char *)name;
    j->names_p[j->n_names++] = e;
}

static void add_names(struct bench_job *j, const Argus__V1__StepRecord *r)
{
    for (size_t i = 0; i < r->n_phases; i++)
        add_name(j, r->phases[i]->name_id);
    for (size_t i = 0; i < r->n_kernels; i++)
        add_name(j, r->kernels[i]->name_id);
    for (size_t i = 0; i < r->n_collectives; i++)
        add_name(j, r->collectives[i]->name_id);
}

/* Generate the pool of steps (deep copies by rank) and the job's names. */
static int job_generate(struct bench_job *j)
{
    for (int p = 0; p < POOL; p++) {
        Argus__V1__StepRecord *const *recs;
        uint64_t end;
        size_t n = diag_scn_next(j->scn, &recs, &end);
        j->pool[p] = calloc(j->ranks, sizeof(*j->pool[p]));
        if (!j->pool[p] || n != j->ranks)
            return -1;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = recs[i]->rank;
            if (r >= j->ranks || j->pool[p][r])
                return -1;
            j->pool[p][r] = copy_record(recs[i]);
            if (!j->pool[p][r])
                return -1;
            add_names(j, recs[i]);
        }
    }
    return 0;
}

static int job_init(struct bench_job *j, uint32_t ranks, uint32_t per_batch)
{
    struct diag_scn_config c = {
        .fault = DIAG_SCN_HEALTHY,
        .ranks = ranks,
        .tp = 8,
        .pp = 1,
        .seed = 7,
        .noise = 0.02,
        .clock_skew_ns = 5e6,
        .base_unix_ns = BASE_NS,
    };
    size_t nres;

    memset(j, 0, sizeof(*j));
    snprintf(j->job, sizeof(j->job), "bench-diag-%u-b%u", ranks, per_batch);
    c.job = j->job;
    j->ranks = ranks;
    j->streams = ranks / PER_STREAM;
    j->per_batch = per_batch;
    j->scn = diag_scn_new(&c);
    j->rec = calloc((size_t)per_batch * PER_STREAM, sizeof(*j->rec));
    j->rec_p = calloc((size_t)per_batch * PER_STREAM, sizeof(*j->rec_p));
    j->res_p = calloc(PER_STREAM, sizeof(*j->res_p));
    j->order = calloc(j->streams, sizeof(*j->order));
    if (!j->scn || !j->rec || !j->rec_p || !j->res_p || !j->order)
        return -1;
    j->res = diag_scn_resources(j->scn, &nres);
    if (nres != ranks)
        return -1;
    for (uint32_t i = 0; i < nres; i++)
        if (j->res[i]->rank != i)
            return -1;
    /* a fixed shuffle of the streams: neighbours do not send together */
    for (uint32_t s = 0; s < j->streams; s++)
        j->order[s] = s;
    uint64_t x = 88172645463325252ULL;
    for (uint32_t s = j->streams - 1; s > 0; s--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t k = (uint32_t)(x % (s + 1)), t = j->order[s];
        j->order[s] = j->order[k];
        j->order[k] = t;
    }
    return job_generate(j);
}

static void job_free(struct bench_job *j)
{
    for (int p = 0; p < POOL; p++) {
        for (uint32_t r = 0; j->pool[p] && r < j->ranks; r++)
            if (j->pool[p][r])
                argus__v1__step_record__free_unpacked(j->pool[p][r], NULL);
        free(j->pool[p]);
    }
    free(j->rec);
    free(j->rec_p);
    free(j->res_p);
    free(j->order);
    diag_scn_free(j->scn);
}

/* The batch of stream s holding steps [from, from + per_batch), in *b. */
static void build_batch(struct bench_job *j, uint32_t s, uint64_t from, char *agent,
                        Argus__V1__Batch *b)
{
    size_t n = 0;

    argus__v1__batch__init(b);
    b->agent_id = agent;
    b->seq = from / j->per_batch + 1;
    for (uint64_t k = from; k < from + j->per_batch; k++) {
        for (uint32_t r = s * PER_STREAM; r < (s + 1) * PER_STREAM; r++) {
            j->rec[n] = *j->pool[k % POOL][r];
            j->rec[n].step = k;
            j->rec[n].start_unix_ns = BASE_NS + k * STEP_NS;
            j->rec_p[n] = &j->rec[n];
            n++;
        }
    }
    b->n_steps = n;
    b->steps = j->rec_p;
    if (from == 0) { /* the stream's first batch: who its ranks are, the names */
        for (uint32_t i = 0; i < PER_STREAM; i++)
            j->res_p[i] = j->res[s * PER_STREAM + i];
        b->n_resources = PER_STREAM;
        b->resources = j->res_p;
        b->n_names = j->n_names;
        b->names = j->names_p;
    }
}

static void tick_until(struct diagnosis *d, uint64_t *next_tick, uint64_t t,
                       struct bench_result *out)
{
    for (; *next_tick <= t; *next_tick += SEC) {
        uint64_t t0 = clock_mono_ns();
        diagnosis_tick(d, *next_tick);
        out->tick_ns += clock_mono_ns() - t0;
    }
}

/* Feed `steps` steps of job j to d; times into *out. */
static void run_job(struct diagnosis *d, struct bench_job *j, uint32_t steps,
                    struct bench_result *out)
{
    uint64_t period = (uint64_t)j->per_batch * STEP_NS, next_tick = BASE_NS + SEC, last = 0;
    char agent[32];
    Argus__V1__Batch b;

    memset(out, 0, sizeof(*out));
    for (uint64_t from = 0; from + j->per_batch <= steps; from += j->per_batch) {
        /* sent when its last step ended, plus the stream's place in the period */
        uint64_t sent = BASE_NS + (from + j->per_batch) * STEP_NS + 50 * MS;
        for (uint32_t i = 0; i < j->streams; i++) {
            uint32_t s = j->order[i];
            uint64_t recv = sent + period * i / j->streams;
            snprintf(agent, sizeof(agent), "node-%05u", s);
            build_batch(j, s, from, agent, &b);
            tick_until(d, &next_tick, recv, out);
            uint64_t t0 = clock_mono_ns();
            diagnosis_feed(d, &b, recv);
            out->feed_ns += clock_mono_ns() - t0;
            out->records += b.n_steps;
            out->batches++;
            last = recv;
        }
    }
    tick_until(d, &next_tick, last + 60 * SEC, out);
    diagnosis_get_stats(d, &out->st);
}

static void print_result(const struct bench_job *j, const struct bench_result *r)
{
    const struct diagnosis_stats *st = &r->st;
    double all = (double)(r->feed_ns + r->tick_ns);
    double closes = (double)st->close_ns_total;

    printf("diag %u ranks (%u streams x %u), batches of %u step%s: %.2f us/record fed, "
           "%.2f without step closes (feed %.2f, tick %.2f); %.2f ms per closed step; "
           "%" PRIu64 " records in %" PRIu64 " batches, %" PRIu64 " steps closed (complete %" PRIu64
           ", watermark %" PRIu64 ", timeout %" PRIu64 ", budget %" PRIu64 "), %" PRIu64
           " reports\n",
           j->ranks, j->streams, PER_STREAM, j->per_batch, j->per_batch == 1 ? "" : "s",
           all / 1e3 / (double)r->records, (all - closes) / 1e3 / (double)r->records,
           (double)r->feed_ns / 1e3 / (double)r->records,
           (double)r->tick_ns / 1e3 / (double)r->records,
           st->steps_closed ? closes / 1e6 / (double)st->steps_closed : 0.0, r->records, r->batches,
           st->steps_closed, st->closed_by[0], st->closed_by[1], st->closed_by[2], st->closed_by[3],
           st->reports);
    fflush(stdout);
}

static int bench_one(struct store *store, uint32_t ranks, uint32_t per_batch, uint32_t steps)
{
    /* ticks run on the simulated (2030) clock: a job idle bound measured
     * against the wall clock of its feeds would retire the job every tick */
    struct diagnosis_options o = {.job_idle_ns = UINT64_MAX / 4};
    struct bench_result r;
    struct bench_job *j = calloc(1, sizeof(*j));
    struct diagnosis *d = diagnosis_new(store, &o);
    int rc = 1;

    if (j && d && job_init(j, ranks, per_batch) == 0) {
        run_job(d, j, steps, &r);
        print_result(j, &r);
        rc = 0;
    } else {
        fprintf(stderr, "bench_diag: cannot set up the %u-rank job\n", ranks);
    }
    diagnosis_free(d);
    if (j)
        job_free(j);
    free(j);
    return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(int argc, char **argv)
{
    uint32_t ranks[] = {10240, 1024}, nranks = 2;
    const char *only = getenv("BENCH_DIAG_RANKS");
    uint32_t steps = argc > 1 ? (uint32_t)atoi(argv[1]) : 40;
    uint32_t batch_default[] = {1, 10}, *batch = batch_default, nbatch = 2;
    char tmp[] = "/tmp/argus-bench-diag-XXXXXX", err[256];
    const char *dir = mkdtemp(tmp);
    struct store_options so = {0};
    struct store *store;
    int rc = 0;

    if (argc > 2) {
        nbatch = (uint32_t)(argc - 2);
        batch = calloc(nbatch, sizeof(*batch));
        for (uint32_t i = 0; batch && i < nbatch; i++)
            batch[i] = (uint32_t)atoi(argv[i + 2]);
    }
    if (only) {
        ranks[0] = (uint32_t)atoi(only);
        nranks = 1;
    }
    if (!batch || steps == 0 || ranks[0] < PER_STREAM || ranks[0] % PER_STREAM) {
        fprintf(stderr,
                "usage: [BENCH_DIAG_RANKS=n (multiple of %d)] bench_diag [steps "
                "[per_batch ...]]\n",
                PER_STREAM);
        return 1;
    }
    if (!dir)
        return 1;
    so.dir = dir;
    if (store_open(&so, &store, err, sizeof(err))) {
        fprintf(stderr, "bench_diag: %s\n", err);
        return 1;
    }
    for (uint32_t k = 0; k < nranks && rc == 0; k++)
        for (uint32_t i = 0; i < nbatch && rc == 0; i++)
            rc =
                batch[i] > 0 && batch[i] <= steps ? bench_one(store, ranks[k], batch[i], steps) : 1;
    store_close(store);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (batch != batch_default)
        free(batch);
    return rc;
}
