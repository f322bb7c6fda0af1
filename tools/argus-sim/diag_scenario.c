/* Scenario generator: see diag_scenario.h. */
#include "tools/argus-sim/diag_scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/name_id.h"
#include "tools/argus-sim/sim_hw.h"

#define MS 1e6
#define FWD_NS (30 * MS)
#define BWD_NS (60 * MS)
#define OPT_NS (5 * MS)
#define EXPERT_NS (10 * MS)
#define TP_XFER_NS (0.5 * MS)
#define DP_XFER_NS (8 * MS)
#define N_TP_COLLS DIAG_SCN_TP_COLLS /* two in forward, two in backward */
#define MAX_COLLS (N_TP_COLLS + 1)
#define N_KERNELS 4
#define N_CLUSTERS 5
#define COMPUTE_STREAM 7
#define COMM_STREAM 13

enum { NM_FWD, NM_BWD, NM_OPT, NM_TP, NM_DP, NM_GEMM, NM_ATTN, NM_NORM, NM_NCCL, NM_MOE, NM_N };
static const char *const names[NM_N] = {"forward",
                                        "backward",
                                        "optimizer",
                                        "tp_allreduce",
                                        "grad_allreduce",
                                        "sm90_gemm_bf16",
                                        "flash_attn_fwd_kernel",
                                        "layer_norm_kernel",
                                        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                                        "moe_experts"};

struct rank_pool {
    Argus__V1__StepRecord rec;
    Argus__V1__Phase ph[4]; /* forward, backward, optimizer, experts (EP > 1) */
    Argus__V1__Phase *php[4];
    Argus__V1__KernelGroup kg[N_KERNELS];
    Argus__V1__KernelGroup *kgp[N_KERNELS];
    Argus__V1__Cluster cl[N_CLUSTERS];
    Argus__V1__Cluster *clp[N_CLUSTERS];
    Argus__V1__HostCounters host;
    Argus__V1__HwCounters hw;
    Argus__V1__Collective co[MAX_COLLS];
    Argus__V1__Collective *cop[MAX_COLLS];
};

struct diag_scn {
    struct diag_scn_config c;
    uint32_t dp;
    uint64_t rng, step;
    uint64_t ids[NM_N];
    char job[160];
    Argus__V1__Resource *res;
    Argus__V1__Resource **resp;
    char (*node)[16];
    struct rank_pool *pool;
    Argus__V1__StepRecord **out;
    double *cur, *t0, *ff, *bf, *phase_start, *offset;
    uint32_t *ncoll;
};

static double rnd(struct diag_scn *s) /* uniform [0, 1) */
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (double)((s->rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static double noise(struct diag_scn *s, double sigma) /* lognormal-ish, median 1 */
{
    double u = rnd(s) + rnd(s) + rnd(s) + rnd(s) - 2; /* ~N(0, 1/3) */
    return exp(sigma * u * 1.732);
}

static uint32_t tp_of(const struct diag_scn *s, uint32_t r)
{
    return r % s->c.tp;
}
static uint32_t pp_of(const struct diag_scn *s, uint32_t r)
{
    return (r / s->c.tp) % s->c.pp;
}
static uint32_t dp_of(const struct diag_scn *s, uint32_t r)
{
    return r / (s->c.tp * s->c.pp);
}
static uint32_t rank_at(const struct diag_scn *s, uint32_t d, uint32_t p, uint32_t t)
{
    return d * s->c.tp * s->c.pp + p * s->c.tp + t;
}

void diag_scn_comms(const struct diag_scn *s, uint32_t rank, uint64_t *tp_comm, uint64_t *dp_comm,
                    uint64_t *tp_name, uint64_t *dp_name)
{
    uint32_t d = dp_of(s, rank), p = pp_of(s, rank), t = tp_of(s, rank);

    *tp_comm = s->c.tp < 2 ? 0 : 0x7000000000000000ULL | ((uint64_t)d << 16) | p;
    *dp_comm = s->dp < 2 ? 0 : 0xD000000000000000ULL | ((uint64_t)p << 16) | t;
    *tp_name = s->ids[NM_TP];
    *dp_name = s->ids[NM_DP];
}

const char *diag_scn_name(void *ctx, uint64_t id)
{
    const struct diag_scn *s = ctx;

    for (int i = 0; i < NM_N; i++)
        if (s->ids[i] == id)
            return names[i];
    return NULL;
}

const char *diag_scn_job(const struct diag_scn *s)
{
    return s->job;
}

double diag_scn_clock_offset(const struct diag_scn *s, uint32_t rank)
{
    return s->offset[rank];
}

void diag_scn_free(struct diag_scn *s)
{
    if (!s)
        return;
    free(s->res);
    free(s->resp);
    free(s->node);
    free(s->pool);
    free(s->out);
    free(s->cur);
    free(s->t0);
    free(s->ff);
    free(s->bf);
    free(s->phase_start);
    free(s->offset);
    free(s->ncoll);
    free(s);
}

Argus__V1__Resource *const *diag_scn_resources(struct diag_scn *s, size_t *n)
{
    *n = s->c.ranks;
    return s->resp;
}

static void pool_init(struct diag_scn *s, uint32_t r)
{
    struct rank_pool *p = &s->pool[r];

    argus__v1__step_record__init(&p->rec);
    p->rec.job = s->job;
    p->rec.rank = r;
    p->rec.sampled = true;
    p->rec.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_SIMULATED;
    for (int i = 0; i < 4; i++) {
        argus__v1__phase__init(&p->ph[i]);
        p->ph[i].name_id = s->ids[i < 3 ? NM_FWD + i : NM_MOE];
        p->ph[i].stream = COMPUTE_STREAM;
        p->php[i] = &p->ph[i];
    }
    p->rec.phases = p->php;
    p->rec.n_phases = s->c.ep > 1 ? 4 : 3;
    for (int i = 0; i < N_CLUSTERS; i++) {
        argus__v1__cluster__init(&p->cl[i]);
        p->clp[i] = &p->cl[i];
    }
    static const int first[N_KERNELS] = {0, 1, 2, 4}, count[N_KERNELS] = {1, 1, 2, 1};
    for (int k = 0; k < N_KERNELS; k++) {
        argus__v1__kernel_group__init(&p->kg[k]);
        p->kg[k].name_id = s->ids[NM_GEMM + k];
        p->kg[k].stream = k == 3 ? COMM_STREAM : COMPUTE_STREAM;
        p->kg[k].clusters = &p->clp[first[k]];
        p->kg[k].n_clusters = (size_t)count[k];
        p->kgp[k] = &p->kg[k];
    }
    p->rec.kernels = s->c.no_kernels ? NULL : p->kgp;
    p->rec.n_kernels = s->c.no_kernels ? 0 : N_KERNELS;
    argus__v1__host_counters__init(&p->host);
    p->rec.host = &p->host;
    argus__v1__hw_counters__init(&p->hw);
    p->rec.hw = &p->hw;
    for (int i = 0; i < MAX_COLLS; i++) {
        argus__v1__collective__init(&p->co[i]);
        p->co[i].stream = COMM_STREAM;
        p->cop[i] = &p->co[i];
    }
    p->rec.collectives = p->cop;
}

static void resource_init(struct diag_scn *s, uint32_t r)
{
    Argus__V1__Resource *x = &s->res[r];

    argus__v1__resource__init(x);
    snprintf(s->node[r], sizeof(s->node[r]), "node%03u", r / 8);
    x->job = s->job;
    x->rank = r;
    x->local_rank = r % 8;
    x->world_size = s->c.ranks;
    x->node = s->node[r];
    x->gpu = (int32_t)(r % 8);
    x->dp = dp_of(s, r);
    x->tp = tp_of(s, r);
    x->pp = pp_of(s, r);
    x->dp_size = s->dp;
    x->tp_size = s->c.tp;
    x->pp_size = s->c.pp;
    x->ep = s->c.ep > 1 ? dp_of(s, r) % s->c.ep : 0;
    x->ep_size = s->c.ep > 1 ? s->c.ep : 1;
    s->resp[r] = x;
}

struct diag_scn *diag_scn_new(const struct diag_scn_config *c)
{
    struct diag_scn *s = calloc(1, sizeof(*s));
    uint32_t n;

    if (!s)
        return NULL;
    s->c = *c;
    if (!s->c.ranks)
        s->c.ranks = 64;
    if (!s->c.tp)
        s->c.tp = 2;
    if (!s->c.pp)
        s->c.pp = 1;
    if (s->c.noise <= 0)
        s->c.noise = 0.02;
    if (s->c.clock_skew_ns == 0)
        s->c.clock_skew_ns = 5 * MS;
    n = s->c.ranks;
    if (n % (s->c.tp * s->c.pp)) {
        free(s);
        return NULL;
    }
    s->dp = n / (s->c.tp * s->c.pp);
    s->rng = s->c.seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    if (c->job)
        snprintf(s->job, sizeof(s->job), "%s", c->job);
    else
        snprintf(s->job, sizeof(s->job), "scn-%d-%llu", (int)s->c.fault,
                 (unsigned long long)c->seed);
    for (int i = 0; i < NM_N; i++)
        s->ids[i] = name_id(names[i]);
    s->res = calloc(n, sizeof(*s->res));
    s->resp = calloc(n, sizeof(*s->resp));
    s->node = calloc(n, sizeof(*s->node));
    s->pool = calloc(n, sizeof(*s->pool));
    s->out = calloc(n, sizeof(*s->out));
    s->cur = calloc(n, sizeof(double));
    s->t0 = calloc(n, sizeof(double));
    s->ff = calloc(n, sizeof(double));
    s->bf = calloc(n, sizeof(double));
    s->phase_start = calloc(n, sizeof(double));
    s->offset = calloc(n, sizeof(double));
    s->ncoll = calloc(n, sizeof(uint32_t));
    if (!s->res || !s->resp || !s->node || !s->pool || !s->out || !s->cur || !s->t0 || !s->ff ||
        !s->bf || !s->phase_start || !s->offset || !s->ncoll) {
        diag_scn_free(s);
        return NULL;
    }
    double node_off = 0;
    for (uint32_t r = 0; r < n; r++) {
        if (r % 8 == 0)
            node_off = (rnd(s) * 2 - 1) * s->c.clock_skew_ns;
        s->offset[r] = node_off;
        s->cur[r] = rnd(s) * 0.1 * MS;
        resource_init(s, r);
        pool_init(s, r);
    }
    return s;
}

#define BASE_UNIX_NS 1800000000000000000ULL

static uint64_t to_unix(const struct diag_scn *s, uint32_t r, double t)
{
    return (s->c.base_unix_ns ? s->c.base_unix_ns : BASE_UNIX_NS) +
           (uint64_t)(int64_t)llround(t + s->offset[r]);
}

/* One collective call of every member of the communicator of rank `r0`'s
 * kind: starts when each member gets there, ends for all when the last one
 * arrived plus the transfer time. */
static void sync_comm(struct diag_scn *s, const uint32_t *mem, uint32_t m, double xfer,
                      uint64_t comm, uint64_t seq, uint64_t name)
{
    double last = 0;

    for (uint32_t i = 0; i < m; i++)
        if (s->cur[mem[i]] > last)
            last = s->cur[mem[i]];
    double end = last + xfer;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t r = mem[i];
        Argus__V1__Collective *c = &s->pool[r].co[s->ncoll[r]++];
        double jitter = rnd(s) * 2000; /* end-time spread across members, ns */
        c->seq = seq;
        c->name_id = name;
        c->comm_id = comm;
        c->bytes = 64ULL << 20;
        c->host_arrival_unix_ns = to_unix(s, r, s->cur[r] - (0.05 + 0.2 * rnd(s)) * MS);
        c->gpu_start_unix_ns = to_unix(s, r, s->cur[r]);
        c->gpu_end_unix_ns = to_unix(s, r, end + jitter);
        s->cur[r] = end + jitter;
    }
}

/* The fault is active at this step: from fault_start until fault_end (when
 * set), so a culprit can recover while the job goes on. */
static bool fault_on(const struct diag_scn *s)
{
    return s->step >= s->c.fault_start && (!s->c.fault_end || s->step < s->c.fault_end);
}

static void tp_colls(struct diag_scn *s, uint32_t idx)
{
    uint32_t mem[64];

    if (s->c.tp < 2)
        return;
    for (uint32_t d = 0; d < s->dp; d++)
        for (uint32_t p = 0; p < s->c.pp; p++) {
            for (uint32_t t = 0; t < s->c.tp; t++)
                mem[t] = rank_at(s, d, p, t);
            uint64_t comm = 0x7000000000000000ULL | ((uint64_t)d << 16) | p;
            bool slow = s->c.fault == DIAG_SCN_LINK_TP && fault_on(s) &&
                        d == dp_of(s, s->c.fault_rank) && p == pp_of(s, s->c.fault_rank);
            sync_comm(s, mem, s->c.tp, TP_XFER_NS * (slow ? 3 : 1) * noise(s, 0.03), comm,
                      s->step * N_TP_COLLS + idx, s->ids[NM_TP]);
        }
}

static void dp_colls(struct diag_scn *s)
{
    uint32_t *mem = malloc(s->dp * sizeof(*mem));

    if (!mem || s->dp < 2) {
        free(mem);
        return;
    }
    for (uint32_t p = 0; p < s->c.pp; p++)
        for (uint32_t t = 0; t < s->c.tp; t++) {
            for (uint32_t d = 0; d < s->dp; d++)
                mem[d] = rank_at(s, d, p, t);
            bool slow =
                s->c.fault == DIAG_SCN_LINK_GROUP && fault_on(s) && t == s->c.fault_tp && p == 0;
            uint64_t comm = 0xD000000000000000ULL | ((uint64_t)p << 16) | t;
            sync_comm(s, mem, s->dp, DP_XFER_NS * (slow ? 3 : 1) * noise(s, 0.03), comm, s->step,
                      s->ids[NM_DP]);
        }
    free(mem);
}

/* Pipeline: stage p's forward ends after stage p-1's (activations), its
 * backward after stage p+1's (gradients). The wait is inside the phase. */
static void pipeline_couple(struct diag_scn *s, bool forward)
{
    for (uint32_t d = 0; d < s->dp; d++)
        for (uint32_t t = 0; t < s->c.tp; t++)
            for (uint32_t i = 1; i < s->c.pp; i++) {
                uint32_t p = forward ? i : s->c.pp - 1 - i;
                uint32_t r = rank_at(s, d, p, t), prev = rank_at(s, d, forward ? p - 1 : p + 1, t);
                double ready = s->cur[prev] + 0.2 * MS;
                if (s->cur[r] < ready)
                    s->cur[r] = ready;
            }
}

static double slow_factor(const struct diag_scn *s, double dflt)
{
    return s->c.factor > 0 ? s->c.factor : dflt;
}

/* Compute factors and host stalls of this step. Returns the stalled rank's
 * stall in ns through *stall (index) or UINT32_MAX. */
static uint32_t apply_faults(struct diag_scn *s, double *stall_ns)
{
    uint32_t n = s->c.ranks, stalled = UINT32_MAX;
    bool on = fault_on(s);

    for (uint32_t r = 0; r < n; r++)
        s->ff[r] = s->bf[r] = 1;
    *stall_ns = 0;
    if (!on)
        return stalled;
    switch (s->c.fault) {
    case DIAG_SCN_COMPUTE_STRAGGLER:
    case DIAG_SCN_IMBALANCE:
        s->ff[s->c.fault_rank] = s->bf[s->c.fault_rank] = slow_factor(s, 1.6);
        break;
    case DIAG_SCN_GPU_THROTTLED: /* 1,410 of 1,980 MHz */
        s->ff[s->c.fault_rank] = s->bf[s->c.fault_rank] = slow_factor(s, 1.4);
        break;
    case DIAG_SCN_MASKED:
        s->ff[s->c.fault_rank] = slow_factor(s, 1.3);
        break;
    case DIAG_SCN_PIPELINE:
        s->bf[s->c.fault_rank] = slow_factor(s, 1.9);
        break;
    case DIAG_SCN_EVERYONE_SLOWER:
        for (uint32_t r = 0; r < n; r++)
            s->ff[r] = s->bf[r] = slow_factor(s, 1.3);
        break;
    case DIAG_SCN_DATA_SKEW: {
        uint32_t r = (uint32_t)(rnd(s) * n);
        s->ff[r] = s->bf[r] = 1.5 + 0.5 * rnd(s);
        break;
    }
    case DIAG_SCN_HOST_STRAGGLER:
        stalled = s->c.fault_rank;
        *stall_ns = 30 * MS * noise(s, 0.05);
        break;
    case DIAG_SCN_JIT:
        if (s->step % 23 == 7) {
            stalled = (uint32_t)(rnd(s) * n);
            *stall_ns = 40 * (FWD_NS + BWD_NS + OPT_NS + DP_XFER_NS);
        }
        break;
    default:
        break;
    }
    return stalled;
}

static void set_cluster(Argus__V1__Cluster *c, uint32_t count, double p50)
{
    double sigma = 0.08;

    c->count = count;
    c->p50_ns = (uint64_t)p50;
    c->p99_ns = (uint64_t)(p50 * exp(sigma * 2.3263));
    c->min_ns = (uint64_t)(p50 * exp(-sigma * 3.5));
    c->max_ns = (uint64_t)(p50 * exp(sigma * 3.5));
    c->sum_ns = (uint64_t)(count * p50 * exp(sigma * sigma / 2));
}

/* Kernel summaries of rank r: slower kernels for a compute fault (factor
 * cf on each); for more work (DIAG_SCN_IMBALANCE) more kernels, each as
 * fast, launched with other shapes (another work id). */
static void fill_kernels(struct diag_scn *s, uint32_t r)
{
    struct rank_pool *p = &s->pool[r];
    double cf = (FWD_NS * s->ff[r] + BWD_NS * s->bf[r]) / (FWD_NS + BWD_NS);
    double coll_max = 0, coll_sum = 0, more = 1;

    if (s->c.fault == DIAG_SCN_IMBALANCE && r == s->c.fault_rank && fault_on(s)) {
        more = cf;
        cf = 1;
    }
    set_cluster(&p->cl[0], (uint32_t)(300 * more), 150e3 * cf * noise(s, s->c.noise));
    set_cluster(&p->cl[1], (uint32_t)(120 * more), 120e3 * cf * noise(s, s->c.noise));
    set_cluster(&p->cl[2], (uint32_t)(200 * more), 8e3 * cf * noise(s, s->c.noise));
    set_cluster(&p->cl[3], (uint32_t)(40 * more), 30e3 * cf * noise(s, s->c.noise));
    for (int k = 0; k < N_KERNELS; k++) /* the agent's FNV-1a of launch shapes, in spirit */
        p->kg[k].work_id = 0x5157000000000000ull + (uint64_t)k * 16 + (more > 1);
    for (uint32_t i = 0; i < s->ncoll[r]; i++) {
        double d = (double)(p->co[i].gpu_end_unix_ns - p->co[i].gpu_start_unix_ns);
        coll_sum += d;
        coll_max = d > coll_max ? d : coll_max;
    }
    set_cluster(&p->cl[4], s->ncoll[r] ? s->ncoll[r] : 1, s->ncoll[r] ? coll_sum / s->ncoll[r] : 1);
    p->cl[4].max_ns = (uint64_t)coll_max;
}

/* Compute segments of one phase with TP collectives between them. */
static void run_phase(struct diag_scn *s, int phase, double base, const double *factor,
                      uint32_t first_coll)
{
    uint32_t n = s->c.ranks;

    for (uint32_t r = 0; r < n; r++)
        s->phase_start[r] = s->cur[r];
    for (uint32_t part = 0; part < 3; part++) {
        for (uint32_t r = 0; r < n; r++)
            s->cur[r] += base / 3 * factor[r] * noise(s, s->c.noise);
        if (part < 2)
            tp_colls(s, first_coll + part);
    }
    pipeline_couple(s, phase == 0);
    for (uint32_t r = 0; r < n; r++) {
        Argus__V1__Phase *ph = &s->pool[r].ph[phase];
        ph->start_ns = (uint64_t)(s->phase_start[r] - s->t0[r]);
        ph->duration_ns = (uint64_t)(s->cur[r] - s->phase_start[r]);
    }
}

/* MoE: the expert phase after forward; odd EP ranks hold the busier
 * experts (1.5x), so expert time depends on the EP rank, not on the work
 * group. */
static void run_experts(struct diag_scn *s)
{
    if (s->c.ep < 2)
        return;
    for (uint32_t r = 0; r < s->c.ranks; r++) {
        Argus__V1__Phase *ph = &s->pool[r].ph[3];
        double load = (dp_of(s, r) % s->c.ep) % 2 ? 1.5 : 1.0;
        bool slow = s->c.fault == DIAG_SCN_EXPERT_STRAGGLER && r == s->c.fault_rank && fault_on(s);
        double d = EXPERT_NS * load * noise(s, s->c.noise) * (slow ? slow_factor(s, 1.3) : 1);
        ph->start_ns = (uint64_t)(s->cur[r] - s->t0[r]);
        ph->duration_ns = (uint64_t)d;
        s->cur[r] += d;
    }
}

/* What rank r's GPU shows this step. */
static enum sim_hw_state hw_state(const struct diag_scn *s, uint32_t r)
{
    if (s->c.fault == DIAG_SCN_POWER_CAPPED)
        return SIM_HW_POWER_CAPPED;
    if (s->c.fault == DIAG_SCN_GPU_THROTTLED && r == s->c.fault_rank && fault_on(s))
        return SIM_HW_THERMAL;
    return SIM_HW_HEALTHY;
}

size_t diag_scn_next(struct diag_scn *s, Argus__V1__StepRecord *const **out, uint64_t *end_ns)
{
    uint32_t n = s->c.ranks;
    double stall, last = 0;
    uint32_t stalled = apply_faults(s, &stall);
    size_t m = 0;

    for (uint32_t r = 0; r < n; r++) {
        s->t0[r] = s->cur[r];
        s->ncoll[r] = 0;
        s->cur[r] += rnd(s) * 0.1 * MS + (r == stalled ? stall : 0);
        s->pool[r].host.off_cpu_ns = (uint64_t)(r == stalled ? stall : 0.5 * MS * rnd(s));
    }
    run_phase(s, 0, FWD_NS, s->ff, 0);
    run_experts(s);
    run_phase(s, 1, BWD_NS, s->bf, 2);
    dp_colls(s);
    for (uint32_t r = 0; r < n; r++) {
        struct rank_pool *p = &s->pool[r];
        double opt = OPT_NS * noise(s, s->c.noise);
        p->ph[2].start_ns = (uint64_t)(s->cur[r] - s->t0[r]);
        p->ph[2].duration_ns = (uint64_t)opt;
        s->cur[r] += opt;
        p->rec.step = s->step;
        p->rec.start_unix_ns = to_unix(s, r, s->t0[r]);
        p->rec.duration_ns = (uint64_t)(s->cur[r] - s->t0[r]);
        p->rec.n_collectives = s->ncoll[r];
        fill_kernels(s, r);
        sim_hw_fill(&p->hw, hw_state(s, r), s->c.seed, s->step, r);
        bool traced = !s->c.no_kernels && (!s->c.sample_every || s->step % s->c.sample_every == 0);
        p->rec.sampled = traced;
        p->rec.kernels = traced ? p->kgp : NULL;
        p->rec.n_kernels = traced ? N_KERNELS : 0;
        p->rec.kernel_events = traced ? 660 + s->ncoll[r] : 0;
        if (s->cur[r] > last)
            last = s->cur[r];
        s->cur[r] += 0.1 * MS;
        bool silent = s->c.fault == DIAG_SCN_SILENT && r == s->c.fault_rank && fault_on(s);
        if (!silent)
            s->out[m++] = &p->rec;
    }
    for (size_t i = m; i > 1; i--) { /* any order across ranks */
        size_t j = (size_t)(rnd(s) * (double)i);
        Argus__V1__StepRecord *t = s->out[i - 1];
        s->out[i - 1] = s->out[j];
        s->out[j] = t;
    }
    s->step++;
    *end_ns = (s->c.base_unix_ns ? s->c.base_unix_ns : BASE_UNIX_NS) + (uint64_t)last;
    *out = s->out;
    return m;
}
