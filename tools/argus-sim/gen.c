#include "tools/argus-sim/gen.h"

#include <stdio.h>
#include <string.h>

#include "common/name_id.h"
#include "tools/argus-sim/sim_hw.h"

static const char *const gen_names[GEN_NAMES] = {
    "forward",
    "backward",
    "optimizer",
    "allreduce",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize256x128x64",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
    "vectorized_elementwise_kernel<4, BinaryFunctor<bf16>>",
    "layer_norm_fwd_kernel",
    "layer_norm_bwd_kernel",
    "softmax_warp_forward",
    "multi_tensor_apply_kernel<AdamFunctor>",
    "reduce_kernel<512, 1, ReduceOp<float>>",
    "cross_entropy_loss_fwd",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
    "ncclAllReduce",
};

const char *gen_name(unsigned i)
{
    return i < GEN_NAMES ? gen_names[i] : "?";
}

static uint64_t gen_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1) from the state. */
static double gen_unit(uint64_t *state)
{
    *state = gen_mix(*state);
    return (double)(*state >> 11) / 9007199254740992.0;
}

static void gen_kernels(struct gen_step *g, uint64_t *rng)
{
    for (unsigned k = 0; k < GEN_KERNEL_GROUPS; k++) {
        Argus__V1__KernelGroup *kg = &g->group[k];
        unsigned nclusters = (k % 3 == 0) ? 2 : 1;
        argus__v1__kernel_group__init(kg);
        kg->name_id = name_id(gen_names[GEN_PHASES + k]);
        kg->stream = k == GEN_KERNEL_GROUPS - 1 ? 20 : 7;
        /* every rank launches the same kernels with the same shapes (the
         * counts' jitter stands for sampling, not for other work) */
        kg->work_id = (uint32_t)kg->name_id | 1;
        for (unsigned c = 0; c < nclusters; c++) {
            Argus__V1__Cluster *cl = &g->cluster[k][c];
            uint64_t base = (uint64_t)(20000 + 5000 * k) << (c * 3);
            argus__v1__cluster__init(cl);
            cl->count = 8 + (uint32_t)(gen_unit(rng) * 4) + 16 * c;
            cl->p50_ns = base + (uint64_t)(gen_unit(rng) * base * 0.02);
            cl->p99_ns = cl->p50_ns + cl->p50_ns / 10;
            cl->min_ns = cl->p50_ns - cl->p50_ns / 20;
            cl->max_ns = cl->p99_ns + cl->p50_ns / 50;
            cl->sum_ns = cl->p50_ns * cl->count;
            g->cluster_ptr[k][c] = cl;
        }
        kg->n_clusters = nclusters;
        kg->clusters = g->cluster_ptr[k];
        g->group_ptr[k] = kg;
    }
    g->rec.n_kernels = GEN_KERNEL_GROUPS;
    g->rec.kernels = g->group_ptr;
}

void gen_step(struct gen_step *g, uint64_t seed, const char *job, uint32_t rank, uint64_t step,
              uint64_t base_unix_ns, uint64_t step_ns)
{
    static const double share[GEN_PHASES] = {0.30, 0.45, 0.10, 0.15};
    uint64_t rng = gen_mix(seed ^ gen_mix(((uint64_t)rank << 40) ^ step));
    uint64_t duration = step_ns + (uint64_t)(gen_unit(&rng) * step_ns * 0.03);
    uint64_t start = base_unix_ns + step * step_ns, offset = 0;

    memset(g, 0, sizeof(*g));
    argus__v1__step_record__init(&g->rec);
    argus__v1__host_counters__init(&g->host);
    g->rec.job = (char *)job;
    g->rec.rank = rank;
    g->rec.step = step;
    g->rec.start_unix_ns = start;
    g->rec.duration_ns = duration;
    g->rec.sampled = 1;
    g->rec.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_SIMULATED;
    for (unsigned p = 0; p < GEN_PHASES; p++) {
        argus__v1__phase__init(&g->phase[p]);
        g->phase[p].name_id = name_id(gen_names[p]);
        g->phase[p].start_ns = offset;
        g->phase[p].duration_ns = (uint64_t)(duration * share[p]);
        g->phase[p].stream = p == 3 ? 20 : 7;
        offset += g->phase[p].duration_ns;
        g->phase_ptr[p] = &g->phase[p];
    }
    g->rec.n_phases = GEN_PHASES;
    g->rec.phases = g->phase_ptr;
    gen_kernels(g, &rng);
    for (unsigned c = 0; c < GEN_COLLECTIVES; c++) {
        Argus__V1__Collective *x = &g->coll[c];
        argus__v1__collective__init(x);
        x->seq = step * GEN_COLLECTIVES + c;
        x->name_id = name_id(gen_names[GEN_NAMES - 1]);
        x->bytes = 64u << 20;
        x->host_arrival_unix_ns = start + (uint64_t)(duration * (0.55 + 0.4 * c));
        x->gpu_start_unix_ns = x->host_arrival_unix_ns + 20000 + (uint64_t)(gen_unit(&rng) * 5000);
        x->gpu_end_unix_ns = x->gpu_start_unix_ns + duration / 20;
        x->stream = 20;
        x->comm_id = 0xc0ffee;
        g->coll_ptr[c] = x;
    }
    g->rec.n_collectives = GEN_COLLECTIVES;
    g->rec.collectives = g->coll_ptr;
    g->host.off_cpu_ns = (uint64_t)(gen_unit(&rng) * 1e6);
    g->host.runq_ns = (uint64_t)(gen_unit(&rng) * 2e5);
    g->host.sync_wait_ns = duration / 50;
    g->host.launches = 400 + (uint64_t)(gen_unit(&rng) * 10);
    g->rec.host = &g->host;
    sim_hw_fill(&g->hw, SIM_HW_HEALTHY, seed, step, rank);
    g->rec.hw = &g->hw;
    g->rec.kernel_events = 0;
    for (unsigned k = 0; k < GEN_KERNEL_GROUPS; k++)
        for (unsigned c = 0; c < g->group[k].n_clusters; c++)
            g->rec.kernel_events += g->cluster[k][c].count;
}

void gen_resource(Argus__V1__Resource *r, const struct gen_layout *l, const char *job,
                  uint32_t rank, const char *node)
{
    uint32_t tp = l->tp ? l->tp : 1, pp = l->pp ? l->pp : 1;
    uint32_t dp = l->world / (tp * pp) ? l->world / (tp * pp) : 1;

    argus__v1__resource__init(r);
    r->job = (char *)job;
    r->rank = rank;
    r->local_rank = rank % l->ranks_per_node;
    r->world_size = l->world;
    r->node = (char *)node;
    r->gpu = (int32_t)r->local_rank;
    r->pid = 10000 + rank;
    r->tp = rank % tp;
    r->dp = (rank / tp) % dp;
    r->pp = rank / (tp * dp);
    r->tp_size = tp;
    r->dp_size = dp;
    r->pp_size = pp;
    r->ep_size = 1;
}
