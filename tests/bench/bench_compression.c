/* The compression target (docs/design.md §3): kernel events of one rank and one
 * step, raw against what the agent ships.
 *
 *   raw     = 216 bytes per kernel event (sizeof(CUpti_ActivityKernel10), CUDA
 *             13) + the bytes of each distinct kernel name of the step, once
 *   shipped = the packed argus.v1.Frame (LZ4) of an argus.v1.Batch holding the
 *             StepRecord(s): kernels from the summarizer, the per-step header
 *             fields (job, rank, step, start, duration, source, sampled,
 *             kernel_events), and on a job's first step the NameEntry of every
 *             name it uses
 *
 * Measured (a) on every step of the real Kineto traces in shared/data/kineto
 * and (b) on an ARGUS-scale synthetic step (~46,000 kernels over ~110
 * (kernel, stream) groups with 1-3 log-normal modes, seed-deterministic). For
 * each, the first step of a job (names included), one steady-state step
 * (names already sent) and a batch of consecutive steps of one rank
 * compressed together (per-step share), for several encodings (which cluster
 * fields are filled, whether values are rounded to 8 significant bits).
 * Phases, host counters and collectives are other modules' and not included.
 * Also the summarizer's cost in ns per kernel event.
 *
 *   build/bench/bench_compression [seed]
 */
#include <limits.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sources/kineto.h"
#include "agent/steps/summarize.h"
#include "common/clock.h"
#include "common/cluster_code.h"
#include "common/kernel_code.h"
#include "common/frame.h"
#include "common/name_id.h"
#include "common/varint.h"
#include "proto/argus.pb-c.h"
#include "tests/lib/rng.h"
#include "tests/lib/ship.h"

#define RAW_KERNEL_RECORD 216u /* sizeof(CUpti_ActivityKernel10) in CUDA 13 */
#define TARGET_RATIO 3700.0
#define TARGET_LONE 5000.0  /* a lone steady step, ARGUS-scale synthetic, default encoding */
#define TARGET_DENSE 2000.0 /* a lone steady step of each dense real line */

static double synth_lone = 0;           /* the last report_synth's lone step ratio */
static double dense_lone_worst = 1e300; /* the lowest lone ratio of the dense lines, coded */
#define SYNTH_GROUPS 110
#define SYNTH_EVENTS 46000
#define SYNTH_STEPS 16
#define JOB "torchelastic-4f8a2c1d"

/* One encoding of the clusters. */
struct encoding {
    const char *label;
    uint32_t fields;
    uint32_t quantize_bits;
};

static const struct encoding encodings[] = {
    {"all fields, exact", SUMMARIZE_FIELDS_ALL, 0},
    {"no min/max, exact", SUMMARIZE_FIELD_SUM, 0},
    {"no min/max, 8 bits (dflt)", SUMMARIZE_DEFAULT_FIELDS, SUMMARIZE_DEFAULT_QUANTIZE_BITS},
    {"no min/max, 6 bits", SUMMARIZE_FIELD_SUM, 6},
    {"count/p50/p99, exact", 0, 0},
    {"count/p50/p99, 8 bits", 0, 8},
};
#define N_ENCODINGS (sizeof(encodings) / sizeof(encodings[0]))

static void step_init(Argus__V1__StepRecord *r, uint32_t rank, uint64_t step, uint64_t start,
                      uint64_t duration, Argus__V1__StepSource source)
{
    argus__v1__step_record__init(r);
    r->job = JOB;
    r->rank = rank;
    r->step = step;
    r->start_unix_ns = start;
    r->duration_ns = duration;
    r->sampled = 1;
    r->source = source;
}

/* A line of figures for n steps (records[0..n)) of raw_bytes raw in all. */
static int report(const char *what, const struct encoding *e, Argus__V1__StepRecord **records,
                  size_t n, const struct dictionary *dict, double raw_per_step, double names_raw)
{
    size_t first, steady, batch;

    ship_sets_forget(); /* the job's first step: no set held */
    first = ship_bytes(records, 1, dict, 1);
    ship_sets_learn(records + 1, n - 1); /* the other steps came before */
    steady = ship_bytes(records, 1, NULL, 2);
    batch = ship_bytes(records, n, NULL, 3);
    double share = (double)batch / (double)n;
    double raw_steady = raw_per_step - names_raw;

    if (ship_code_kernels && strncmp(what, "dense", 5) == 0 &&
        raw_steady / (double)steady < dense_lone_worst)
        dense_lone_worst = raw_steady / (double)steady;

    printf("  %-26s %-22s first %6zu B %7.0fx | steady %5zu B %7.0fx | batch of %zu: %7.1f B "
           "%7.0fx\n",
           what, e->label, first, (raw_per_step) / first, steady, raw_steady / steady, n, share,
           raw_steady / share);
    return raw_steady / share >= TARGET_RATIO;
}

/* The synthetic line: first step, one steady step, batches of 4, 8 and 16
 * steps of one rank, a batch of step 0 of 8 ranks (one node), and for
 * comparison 8 steps compressed by LZ4HC and zstd. */
static double report_synth(const struct encoding *e, Argus__V1__StepRecord **records,
                           Argus__V1__StepRecord **ranks, const struct dictionary *dict,
                           double raw_per_step, double names_raw)
{
    static const size_t batches[] = {4, 8, 16};
    double raw_steady = raw_per_step - names_raw, ratio8 = 0;
    size_t first, steady, node, hc, zs;

    ship_sets_forget(); /* the job's first step: no set held */
    first = ship_bytes(records, 1, dict, 1);
    ship_sets_learn(records + 1, SYNTH_STEPS - 1); /* the other steps came before */
    steady = ship_bytes(records, 1, NULL, 2);
    node = ship_bytes(ranks, 8, NULL, 4);
    synth_lone = raw_steady / steady;

    printf("  %-26s first %5zu B %5.0fx | 1 step %5zu B %5.0fx", e->label, first,
           raw_per_step / first, steady, raw_steady / steady);
    for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
        double share = (double)ship_bytes(records, batches[i], NULL, 3) / (double)batches[i];

        printf(" | %2zu: %6.1f B %5.0fx", batches[i], share, raw_steady / share);
        if (batches[i] == 8)
            ratio8 = raw_steady / share;
    }
    ship_other_codecs(records, 8, &hc, &zs);
    printf(" | 8 ranks x 1 step: %6.1f B %5.0fx | 8 steps as lz4hc %5.0fx, zstd %5.0fx\n",
           node / 8.0, raw_steady / (node / 8.0), raw_steady / (hc / 8.0), raw_steady / (zs / 8.0));
    return ratio8;
}

/* Where the bytes of lone step r go before LZ4: its kernels as KernelGroup
 * messages (the fields with their keys, and the groups' own keys and
 * lengths) against their coding (common/kernel_code.h), and the rest of the
 * batch; and after LZ4. */
static void report_bytes(Argus__V1__StepRecord *r)
{
    size_t ids = 0, streams = 0, work = 0, plain = 0, coded = 0, keys = 0, all = 0, as_set = 0,
           batch;
    uint8_t *p = malloc(kernel_code_bound(r) + 1);

    for (size_t i = 0; i < r->n_kernels && p; i++) {
        const Argus__V1__KernelGroup *g = r->kernels[i];

        ids += g->name_id ? 9 : 0;
        streams += g->stream ? 1 + varint_size(g->stream) : 0;
        work += g->work_id ? 5 : 0;
        for (size_t k = 0; k < g->n_clusters; k++) {
            size_t m = argus__v1__cluster__get_packed_size(g->clusters[k]);

            plain += 1 + varint_size(m) + m;
        }
        coded += g->n_clusters
                     ? cluster_code_encode(g->clusters, g->n_clusters,
                                           cluster_code_header(g->clusters, g->n_clusters), p)
                     : 0;
        keys += 1 + varint_size(argus__v1__kernel_group__get_packed_size(g));
    }
    all = p ? kernel_code_encode(r, false, p) : 0;
    as_set = p ? kernel_code_encode(r, true, p) : 0;
    free(p);
    p = ship_batch_pack(&r, 1, NULL, 2, &batch);
    free(p);
    printf("  lone step, default encoding, before LZ4: %zu groups as KernelGroups %zu B (name_id "
           "%zu, stream %zu, work_id %zu, keys %zu, clusters %zu); coded %zu B (clusters %zu), "
           "as a held identity set %zu B; batch %zu B in all, %zu B after LZ4 in its frame\n",
           r->n_kernels, ids + streams + work + keys + plain, ids, streams, work, keys, plain, all,
           coded, as_set, batch, ship_bytes(&r, 1, NULL, 2));
}

/* --- (a) the real traces ------------------------------------------------- */

/* $ARGUS_KINETO_DIR, else REPO/../shared/data/kineto (or REPO/shared/...)
 * with REPO the first directory above this binary holding tests/run.sh. */
static int find_data_dir(char *dir, size_t len)
{
    const char *env = getenv("ARGUS_KINETO_DIR");
    char exe[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n;

    if (env) {
        snprintf(dir, len, "%s", env);
        return access(dir, R_OK);
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    for (char *slash = strrchr(exe, '/'); slash; slash = strrchr(exe, '/')) {
        *slash = 0;
        snprintf(probe, sizeof(probe), "%s/tests/run.sh", exe);
        if (access(probe, R_OK) == 0) {
            snprintf(dir, len, "%.*s/../shared/data/kineto", PATH_MAX - 32, exe);
            if (access(dir, R_OK) == 0)
                return 0;
            snprintf(dir, len, "%.*s/shared/data/kineto", PATH_MAX - 32, exe);
            return access(dir, R_OK);
        }
    }
    return -1;
}

/* The names used by step s of t, as a dictionary. */
static int trace_dictionary(const struct kineto_trace *t, int32_t s, struct dictionary *d)
{
    char *used = calloc(t->n_names, 1);

    d->entries = calloc(t->n_names, sizeof(*d->entries));
    d->ptrs = calloc(t->n_names, sizeof(*d->ptrs));
    d->n = d->bytes = 0;
    if (!used || !d->entries || !d->ptrs) {
        free(used);
        return -1;
    }
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].step == s)
            used[t->spans[i].name] = 1;
    for (size_t i = 0; i < t->n_names; i++) {
        if (!used[i])
            continue;
        argus__v1__name_entry__init(&d->entries[d->n]);
        d->entries[d->n].job = JOB;
        d->entries[d->n].id = t->name_ids[i];
        d->entries[d->n].name = t->names[i];
        d->ptrs[d->n] = &d->entries[d->n];
        d->bytes += strlen(t->names[i]);
        d->n++;
    }
    free(used);
    return 0;
}

static void dictionary_free(struct dictionary *d)
{
    free(d->entries);
    free(d->ptrs);
}

/* Summarise every step of t with encoding e into records (caller frees). */
static int trace_summarize(const struct kineto_trace *t, const struct encoding *e,
                           Argus__V1__StepRecord *records, double *ns_per_event)
{
    struct summarize_options o;
    struct summarizer *s;
    uint64_t t0, spent = 0, events = 0;
    const struct kineto_span **in = malloc((t->n_spans + 1) * sizeof(*in));

    summarize_options_default(&o);
    o.fields = e->fields;
    o.quantize_bits = e->quantize_bits;
    s = summarizer_new(&o);
    if (!s || !in) {
        summarizer_free(s);
        free(in);
        return -1;
    }
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct kineto_step *st = &t->steps[k];
        size_t n = 0;

        for (size_t i = 0; i < t->n_spans; i++)
            if (t->spans[i].step == (int32_t)k)
                in[n++] = &t->spans[i];
        step_init(&records[k], (uint32_t)(t->rank < 0 ? 0 : t->rank), st->number, st->ts_ns,
                  st->dur_ns, ARGUS__V1__STEP_SOURCE__STEP_SOURCE_IMPORTED);
        t0 = clock_mono_ns();
        for (size_t i = 0; i < n; i++)
            summarizer_add_shape(s, t->name_ids[in[i]->name], in[i]->stream, in[i]->dur_ns,
                                 in[i]->shape);
        summarizer_finish(s, &records[k]);
        spent += clock_mono_ns() - t0;
        events += n;
    }
    summarizer_free(s);
    free(in);
    *ns_per_event = events ? (double)spent / (double)events : 0;
    return 0;
}

/* "PREFIXstep N: E ev G gr C cl" of record r into what. */
static void step_label(const Argus__V1__StepRecord *r, const char *prefix, char *what, size_t len)
{
    size_t clusters = 0;

    for (size_t g = 0; g < r->n_kernels; g++)
        clusters += r->kernels[g]->n_clusters;
    snprintf(what, len, "%sstep %llu: %llu ev %zu gr %zu cl", prefix, (unsigned long long)r->step,
             (unsigned long long)r->kernel_events, r->n_kernels, clusters);
}

/* The dense real mix: each step of t as a step that launched its kernels
 * DENSE_COPIES times over (as a step of that many micro-batches would: the
 * same kernels, names, streams and shapes), each copy's durations jittered by
 * a log-normal factor of sigma DENSE_SIGMA; default encoding. The real traces
 * are sparse (2.9 events a group), which leaves LZ4 the names and ids to
 * shrink; a real training step runs each group's kernels many times. */
#define DENSE_COPIES 50
#define DENSE_SIGMA 0.05

static void bench_dense(const struct kineto_trace *t)
{
    static const struct encoding dense_encodings[] = {
        {"dflt, coded", SUMMARIZE_DEFAULT_FIELDS, SUMMARIZE_DEFAULT_QUANTIZE_BITS},
        {"dflt, KernelGroups", SUMMARIZE_DEFAULT_FIELDS, SUMMARIZE_DEFAULT_QUANTIZE_BITS},
    };
    struct summarize_options o;
    struct summarizer *s;
    Argus__V1__StepRecord records[16], *ptrs[16];
    uint64_t rng = 2606;

    summarize_options_default(&o);
    s = summarizer_new(&o);
    if (!s || !t->n_steps || t->n_steps > 16) {
        summarizer_free(s);
        return;
    }
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct kineto_step *st = &t->steps[k];

        step_init(&records[k], (uint32_t)(t->rank < 0 ? 0 : t->rank), st->number, st->ts_ns,
                  st->dur_ns, ARGUS__V1__STEP_SOURCE__STEP_SOURCE_IMPORTED);
        for (int copy = 0; copy < DENSE_COPIES; copy++)
            for (size_t i = 0; i < t->n_spans; i++) {
                const struct kineto_span *sp = &t->spans[i];
                double dur = (double)sp->dur_ns * exp(DENSE_SIGMA * rng_normal(&rng));

                if (sp->step == (int32_t)k)
                    summarizer_add_shape(s, t->name_ids[sp->name], sp->stream,
                                         dur < 1 ? 1 : (uint64_t)dur, sp->shape);
            }
        summarizer_finish(s, &records[k]);
    }
    for (size_t k = 0; k < t->n_steps; k++) {
        struct dictionary d;
        char what[64], prefix[24];

        if (trace_dictionary(t, (int32_t)k, &d) < 0)
            break;
        snprintf(prefix, sizeof(prefix), "dense x%d ", DENSE_COPIES);
        step_label(&records[k], prefix, what, sizeof(what));
        for (size_t j = 0; j < t->n_steps; j++)
            ptrs[j] = &records[(k + j) % t->n_steps];
        /* coded as agents ship it, and as KernelGroups (before the coding) */
        for (int plain = 0; plain < 2; plain++) {
            ship_code_kernels = !plain;
            report(what, &dense_encodings[plain], ptrs, t->n_steps, &d,
                   (double)records[k].kernel_events * RAW_KERNEL_RECORD + (double)d.bytes,
                   (double)d.bytes);
        }
        ship_code_kernels = true;
        dictionary_free(&d);
    }
    for (size_t k = 0; k < t->n_steps; k++)
        summarizer_free_groups(&records[k]);
    summarizer_free(s);
}

static void bench_trace(const char *dir, const char *file)
{
    char path[PATH_MAX + 64], err[256];
    struct kineto_trace *t;
    Argus__V1__StepRecord records[16], *ptrs[16];

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (kineto_load(path, NULL, &t, err, sizeof(err)) < 0) {
        printf("  %s: %s\n", file, err);
        return;
    }
    printf("%s: rank %d/%d, %zu kernels, %zu names, %zu steps\n", file, t->rank, t->world_size,
           t->n_spans, t->n_names, t->n_steps);
    for (size_t e = 0; e < N_ENCODINGS && t->n_steps && t->n_steps <= 16; e++) {
        double ns_per_event;

        if (trace_summarize(t, &encodings[e], records, &ns_per_event) < 0)
            break;
        for (size_t k = 0; k < t->n_steps; k++) {
            struct dictionary d;
            char what[64];

            if (trace_dictionary(t, (int32_t)k, &d) < 0)
                break;
            step_label(&records[k], "", what, sizeof(what));
            for (size_t j = 0; j < t->n_steps; j++)
                ptrs[j] = &records[(k + j) % t->n_steps];
            report(what, &encodings[e], ptrs, t->n_steps, &d,
                   (double)records[k].kernel_events * RAW_KERNEL_RECORD + (double)d.bytes,
                   (double)d.bytes);
            dictionary_free(&d);
        }
        if (e == 0)
            printf("  summarizer: %.0f ns per kernel event (add + finish)\n", ns_per_event);
        for (size_t k = 0; k < t->n_steps; k++)
            summarizer_free_groups(&records[k]);
    }
    bench_dense(t);
    kineto_free(t);
}

/* --- (b) the synthetic step ---------------------------------------------- */

struct synth_group {
    char name[512];
    uint64_t name_id;
    uint32_t stream;
    uint32_t n_modes;
    uint32_t count[3];
    double median_ns[3], sigma[3];
};

static const char *const name_templates[] = {
    "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_%dx%d_%dx3_tn_align8>("
    "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_%dx%d_%dx3_tn_align8::Params)",
    "void at::native::vectorized_elementwise_kernel<%d, at::native::BUnaryFunctor<c10::BFloat16, "
    "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
    "at::detail::Array<char*, %d> >(int, at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, "
    "%d>) /* %d */",
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<%d, %d, %d, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<%d, 128, 64, 4, cutlass::bfloat16_t> >, true, "
    "false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<%d>) /* chan %d, %d, %d "
    "*/",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>("
    "int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
    "float*, c10::BFloat16*) /* %d %d %d %d */",
};

/* The job's 110 groups: names, streams, modes (1-3) and their counts. */
static void synth_init(uint64_t seed, struct synth_group *g, size_t n)
{
    uint64_t rng = seed;
    double weight[SYNTH_GROUPS], total = 0;

    for (size_t i = 0; i < n; i++) {
        size_t tpl = rng_next(&rng) % (sizeof(name_templates) / sizeof(name_templates[0]));
        int a = 16 << (rng_next(&rng) % 5), b = 16 << (rng_next(&rng) % 5), c = (int)i;
        double r = rng_uniform(&rng);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(g[i].name, sizeof(g[i].name), name_templates[tpl], a, b, c, a, b, c);
#pragma GCC diagnostic pop
        g[i].name_id = name_id(g[i].name);
        g[i].stream = tpl == 3 ? 20 + (uint32_t)(rng_next(&rng) % 3) : 7;
        g[i].n_modes = r < 0.45 ? 1 : r < 0.8 ? 2 : 3;
        g[i].median_ns[0] = 2000 * exp(rng_uniform(&rng) * log(1000.0)); /* 2 us .. 2 ms */
        for (uint32_t m = 0; m < 3; m++) {
            if (m)
                g[i].median_ns[m] = g[i].median_ns[m - 1] * exp(0.7 + 1.8 * rng_uniform(&rng));
            g[i].sigma[m] = 0.02 + 0.10 * rng_uniform(&rng);
        }
        weight[i] = exp(rng_normal(&rng));
        total += weight[i];
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t count = 10 + (uint32_t)(weight[i] / total * (SYNTH_EVENTS - 10.0 * n));
        double main_share = 0.4 + 0.4 * rng_uniform(&rng), second = 0.5 + 0.5 * rng_uniform(&rng);

        g[i].count[0] = g[i].n_modes == 1 ? count : (uint32_t)(count * main_share);
        g[i].count[1] = g[i].n_modes == 3 ? (uint32_t)((count - g[i].count[0]) * second)
                                          : count - g[i].count[0];
        g[i].count[2] = g[i].n_modes == 3 ? count - g[i].count[0] - g[i].count[1] : 0;
    }
}

struct synth_event {
    uint32_t group;
    uint64_t duration_ns;
};

/* Step k's kernels, interleaved as a GPU would run them (same counts every
 * step, fresh durations). ev holds SYNTH_EVENTS * 2; returns how many. */
static size_t synth_step(const struct synth_group *g, size_t n, uint64_t seed, uint64_t k,
                         struct synth_event *ev)
{
    uint64_t rng = seed ^ ((k + 1) * 0xd1b54a32d192ed03ULL);
    size_t events = 0;

    for (size_t i = 0; i < n; i++)
        for (uint32_t m = 0; m < g[i].n_modes; m++)
            for (uint32_t j = 0; j < g[i].count[m] && events < 2 * SYNTH_EVENTS; j++)
                ev[events++] = (struct synth_event){
                    (uint32_t)i,
                    (uint64_t)llround(g[i].median_ns[m] * exp(g[i].sigma[m] * rng_normal(&rng)))};
    for (size_t i = events; i > 1; i--) {
        size_t j = rng_next(&rng) % i;
        struct synth_event t = ev[i - 1];

        ev[i - 1] = ev[j];
        ev[j] = t;
    }
    return events;
}

/* Summarise steps 0..n_steps of rank with encoding e into records; the cost
 * per event is timed over add and finish only. */
static int synth_summarize(const struct synth_group *g, uint64_t seed, uint32_t rank,
                           size_t n_steps, const struct encoding *e, Argus__V1__StepRecord *records,
                           double *ns_per_event)
{
    static struct synth_event ev[2 * SYNTH_EVENTS];
    struct summarize_options o;
    struct summarizer *s;
    uint64_t spent_add = 0, spent_finish = 0, events = 0;

    summarize_options_default(&o);
    o.fields = e->fields;
    o.quantize_bits = e->quantize_bits;
    s = summarizer_new(&o);
    if (!s)
        return -1;
    for (uint64_t k = 0; k < n_steps; k++) {
        size_t n = synth_step(g, SYNTH_GROUPS, seed ^ (rank * 0x2545f4914f6cdd1dULL), k, ev);
        uint64_t t0, t1;

        step_init(&records[k], rank, 1000 + k, 1733130000000000000ULL + k * 2100000000ULL,
                  2100000000ULL + (uint64_t)(rng_next(&seed) % 50000000),
                  ARGUS__V1__STEP_SOURCE__STEP_SOURCE_NVTX);
        t0 = clock_mono_ns();
        for (size_t i = 0; i < n; i++)
            /* one launch shape per group, the same every step (KernelGroup.work_id) */
            summarizer_add_shape(s, g[ev[i].group].name_id, g[ev[i].group].stream,
                                 ev[i].duration_ns, (uint32_t)(g[ev[i].group].name_id | 1));
        t1 = clock_mono_ns();
        summarizer_finish(s, &records[k]);
        spent_add += t1 - t0;
        spent_finish += clock_mono_ns() - t1;
        events += n;
    }
    summarizer_free(s);
    ns_per_event[0] = (double)spent_add / (double)events;
    ns_per_event[1] = (double)spent_finish / (double)events;
    return 0;
}

/* Clusters the summary r has for group g. */
static size_t group_clusters(const Argus__V1__StepRecord *r, const struct synth_group *g)
{
    for (size_t i = 0; i < r->n_kernels; i++)
        if (r->kernels[i]->name_id == g->name_id && r->kernels[i]->stream == g->stream)
            return r->kernels[i]->n_clusters;
    return 0;
}

static int bench_synth(uint64_t seed)
{
    static struct synth_group g[SYNTH_GROUPS];
    Argus__V1__NameEntry entries[SYNTH_GROUPS], *eptrs[SYNTH_GROUPS];
    Argus__V1__StepRecord records[SYNTH_STEPS], *ptrs[SYNTH_STEPS], ranks[8], *rank_ptrs[8];
    struct dictionary d = {.entries = entries, .ptrs = eptrs};
    int met = 0;

    synth_init(seed, g, SYNTH_GROUPS);
    for (size_t i = 0; i < SYNTH_GROUPS; i++) {
        argus__v1__name_entry__init(&entries[d.n]);
        entries[d.n].job = JOB;
        entries[d.n].id = g[i].name_id;
        entries[d.n].name = g[i].name;
        eptrs[d.n] = &entries[d.n];
        d.bytes += strlen(g[i].name);
        d.n++;
    }
    for (size_t e = 0; e < N_ENCODINGS; e++) {
        double ns_per_event[2], ratio;
        size_t clusters = 0, modes = 0, resolvable = 0, matched = 0;

        if (synth_summarize(g, seed, 17, SYNTH_STEPS, &encodings[e], records, ns_per_event) < 0)
            return -1;
        for (uint32_t r = 0; r < 8; r++) {
            double unused[2];

            if (synth_summarize(g, seed, r, 1, &encodings[e], &ranks[r], unused) < 0)
                return -1;
            rank_ptrs[r] = &ranks[r];
        }
        for (size_t i = 0; i < SYNTH_STEPS; i++)
            ptrs[i] = &records[i];
        for (size_t i = 0; i < records[0].n_kernels; i++)
            clusters += records[0].kernels[i]->n_clusters;
        for (size_t i = 0; i < SYNTH_GROUPS; i++) {
            int ok = 1;

            for (uint32_t m = 0; m < g[i].n_modes; m++)
                ok &= g[i].count[m] >= SUMMARIZE_DEFAULT_MIN_COUNT;
            modes += g[i].n_modes;
            resolvable += (size_t)ok;
            matched += (size_t)(ok && group_clusters(&records[0], &g[i]) == g[i].n_modes);
        }
        if (e == 0)
            printf("synthetic (seed %llu): %llu kernels, %zu groups, %zu modes generated, %zu "
                   "clusters found (%zu/%zu groups whose modes all have >= %u events: right "
                   "cluster count), %zu name bytes\n  summarizer: %.1f ns per kernel event "
                   "(add %.1f + finish %.1f), %.2f ms per step\n",
                   (unsigned long long)seed, (unsigned long long)records[0].kernel_events,
                   records[0].n_kernels, modes, clusters, matched, resolvable,
                   SUMMARIZE_DEFAULT_MIN_COUNT, d.bytes, ns_per_event[0] + ns_per_event[1],
                   ns_per_event[0], ns_per_event[1],
                   (ns_per_event[0] + ns_per_event[1]) * (double)records[0].kernel_events / 1e6);
        ratio = report_synth(&encodings[e], ptrs, rank_ptrs, &d,
                             (double)records[0].kernel_events * RAW_KERNEL_RECORD + (double)d.bytes,
                             (double)d.bytes);
        if (encodings[e].fields == SUMMARIZE_DEFAULT_FIELDS &&
            encodings[e].quantize_bits == SUMMARIZE_DEFAULT_QUANTIZE_BITS) {
            met = ratio >= TARGET_RATIO;
            printf("target %.0fx for a lone step, default encoding: %.0fx, %s\n", TARGET_LONE,
                   synth_lone, synth_lone >= TARGET_LONE ? "met" : "NOT met");
            report_bytes(&records[0]);
        }
        for (size_t i = 0; i < SYNTH_STEPS; i++)
            summarizer_free_groups(&records[i]);
        for (size_t i = 0; i < 8; i++)
            summarizer_free_groups(&ranks[i]);
    }
    return met;
}

int main(int argc, char **argv)
{
    static const char *const files[] = {
        "trace_filter__sampled_rank-0.json.gz",
        "trace_filter__sampled_rank-1.json.gz",
        "nccl_parser_config__nccl_data.json.gz",
    };
    bool check = argc > 1 && strcmp(argv[1], "--check") == 0;
    uint64_t seed = argc > 1 + check ? strtoull(argv[1 + check], NULL, 0) : 2606;
    char dir[PATH_MAX];
    bool dense = false;
    int met;

    printf("raw = %u B per kernel event + distinct names once; shipped = LZ4 Frame of the Batch; "
           "target %.0fx (steady state)\n",
           RAW_KERNEL_RECORD, TARGET_RATIO);
    if (find_data_dir(dir, sizeof(dir)) == 0) {
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
            bench_trace(dir, files[i]);
        dense = dense_lone_worst < 1e300;
        if (dense)
            printf("target %.0fx for a lone step of every dense real line: lowest %.0fx, %s\n",
                   TARGET_DENSE, dense_lone_worst,
                   dense_lone_worst >= TARGET_DENSE ? "met" : "NOT met");
    } else
        printf("skip: real Kineto traces not found (REPO/../shared/data/kineto)\n");
    met = bench_synth(seed);
    if (met < 0)
        return 1;
    printf("target %.0fx per step in a batch of 8 steps, default encoding: %s\n", TARGET_RATIO,
           met ? "met" : "NOT met");
    /* --check (tests/integration/compression_bound.sh): the bounds stay met */
    return check && (!met || synth_lone < TARGET_LONE || (dense && dense_lone_worst < TARGET_DENSE))
               ? 1
               : 0;
}
