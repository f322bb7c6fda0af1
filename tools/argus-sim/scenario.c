#include "tools/argus-sim/scenario.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/delivery/batcher.h"
#include "agent/delivery/names.h"
#include "common/clock.h"
#include "common/frame.h"
#include "tools/argus-sim/diag_scenario.h"
#include "tools/argus-sim/liveness.h"
#include "tools/argus-sim/restamp.h"

static const struct {
    const char *name;
    enum diag_scn_fault fault;
    const char *cause;
    enum liveness_kind live; /* the ranks stop at the onset (liveness.h) */
} scenarios[] = {
    {"healthy", DIAG_SCN_HEALTHY, "", LIVENESS_NONE},
    {"compute-straggler", DIAG_SCN_COMPUTE_STRAGGLER, "COMPUTE", LIVENESS_NONE},
    {"link-degraded-group", DIAG_SCN_LINK_GROUP, "LINK", LIVENESS_NONE},
    {"masked-straggler", DIAG_SCN_MASKED, "COMPUTE", LIVENESS_NONE},
    {"pipeline-stage-straggler", DIAG_SCN_PIPELINE, "COMPUTE", LIVENESS_NONE},
    {"jit-stalls", DIAG_SCN_JIT, "", LIVENESS_NONE},
    {"data-skew", DIAG_SCN_DATA_SKEW, "", LIVENESS_NONE},
    {"everyone-slower", DIAG_SCN_EVERYONE_SLOWER, "JOB_REGRESSION", LIVENESS_NONE},
    {"silent-rank", DIAG_SCN_SILENT, "SILENT", LIVENESS_NONE},
    {"host-straggler", DIAG_SCN_HOST_STRAGGLER, "HOST", LIVENESS_NONE},
    {"hang", DIAG_SCN_HEALTHY, "HANG", LIVENESS_HANG},
    {"death", DIAG_SCN_HEALTHY, "EXITED", LIVENESS_DEATH},
    {"checkpoint", DIAG_SCN_HEALTHY, "", LIVENESS_CHECKPOINT},
    /* a finding for the job's owner: pages nobody */
    {"imbalance", DIAG_SCN_IMBALANCE, "", LIVENESS_NONE},
    {"gpu-throttled", DIAG_SCN_GPU_THROTTLED, "GPU_THROTTLED", LIVENESS_NONE},
    /* every GPU capped alike: nobody stands out */
    {"power-capped", DIAG_SCN_POWER_CAPPED, "", LIVENESS_NONE},
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

int scenario_known(const char *name)
{
    for (size_t i = 0; i < NSCENARIOS; i++)
        if (strcmp(scenarios[i].name, name) == 0)
            return 1;
    return 0;
}

const char *scenario_list(void)
{
    return "healthy, compute-straggler, link-degraded-group, masked-straggler, "
           "pipeline-stage-straggler, jit-stalls, data-skew, everyone-slower, silent-rank, "
           "host-straggler, hang, death, checkpoint, imbalance, gpu-throttled, power-capped";
}

/* The ranks the scenario makes culprits, from the generated resources. */
static int scenario_truth_fill(const struct sim_config *c, struct diag_scn *s, size_t k,
                               const struct diag_scn_config *dc, struct scenario_truth *t)
{
    size_t n;
    Argus__V1__Resource *const *res = diag_scn_resources(s, &n);

    t->name = scenarios[k].name;
    t->cause = scenarios[k].cause;
    t->onset = dc->fault_start;
    t->culprits = calloc(n + 1, sizeof(*t->culprits));
    if (!t->culprits)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const Argus__V1__Resource *r = res[i];
        bool hit = false;
        switch (dc->fault) {
        case DIAG_SCN_LINK_GROUP:
            hit = r->tp == dc->fault_tp && r->pp == 0;
            break;
        case DIAG_SCN_COMPUTE_STRAGGLER:
        case DIAG_SCN_GPU_THROTTLED:
        case DIAG_SCN_MASKED:
        case DIAG_SCN_PIPELINE:
        case DIAG_SCN_SILENT:
        case DIAG_SCN_HOST_STRAGGLER:
        case DIAG_SCN_IMBALANCE: /* named by a finding, paged by nobody */
            hit = r->rank == dc->fault_rank;
            break;
        default:
            hit = scenarios[k].live != LIVENESS_NONE && scenarios[k].live != LIVENESS_CHECKPOINT &&
                  r->rank == dc->fault_rank;
            break;
        }
        if (hit)
            t->culprits[t->nculprits++] = r->rank;
    }
    return 0;
}

static void scenario_config(const struct sim_config *c, size_t k, struct diag_scn_config *dc)
{
    uint32_t tp = (uint32_t)c->tp, pp = (uint32_t)c->pp;

    *dc = (struct diag_scn_config){
        .fault = scenarios[k].fault,
        .ranks = (uint32_t)c->ranks,
        .tp = tp,
        .pp = pp,
        .seed = c->seed,
        .fault_start = c->onset,
        .fault_end = c->fault_end,
        .factor = c->severity,
        .noise = 0.02,
        .clock_skew_ns = 5e6,
        .job = c->job,
        .base_unix_ns = c->base_unix_ns,
    };
    if (dc->fault == DIAG_SCN_PIPELINE && pp < 2)
        dc->pp = pp = 4; /* the scenario is defined on PP=4 */
    /* the culprit: a rank in the middle of the job (stage 2 for the pipeline case) */
    uint32_t dp = (uint32_t)c->ranks / (tp * pp);
    dc->fault_rank = c->fault_rank >= 0
                         ? (uint32_t)c->fault_rank
                         : (dc->fault == DIAG_SCN_PIPELINE ? (2 * dp + dp / 2) * tp + 1
                                                           : (uint32_t)c->ranks / 2 + 3);
    dc->fault_tp = tp > 1 ? 1 : 0;
}

struct scenario_agent {
    struct names *names;
    struct batcher *batcher;
};

static int scenario_seal(const struct scenario_sink *sink, struct scenario_agent *a, uint32_t i)
{
    void *frame;
    size_t len;
    uint32_t nsteps = (uint32_t)batcher_steps(a->batcher);
    uint64_t seq = sink->next_seq(sink->ctx, i);
    int r = batcher_seal(a->batcher, sink->epoch(sink->ctx, i), seq, &frame, &len);

    if (r == -ENODATA)
        return 0;
    return r < 0 ? r : sink->push(sink->ctx, i, seq, frame, len, nsteps);
}

static void scenario_define_names(struct names *n, struct diag_scn *s,
                                  const Argus__V1__StepRecord *r)
{
    for (size_t i = 0; i < r->n_phases; i++)
        names_define(n, r->phases[i]->name_id, diag_scn_name(s, r->phases[i]->name_id));
    for (size_t i = 0; i < r->n_kernels; i++)
        names_define(n, r->kernels[i]->name_id, diag_scn_name(s, r->kernels[i]->name_id));
    for (size_t i = 0; i < r->n_collectives; i++)
        names_define(n, r->collectives[i]->name_id, diag_scn_name(s, r->collectives[i]->name_id));
}

static int scenario_run(const struct sim_config *c, struct diag_scn *s, struct scenario_agent *ag,
                        size_t nagents, const struct scenario_sink *sink, uint64_t steps)
{
    size_t nres;
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    int r = 0;

    for (size_t i = 0; i < nres; i++)
        names_set_resource(ag[res[i]->rank / c->ranks_per_node].names, res[i]);
    for (uint64_t step = 0; step < steps && r == 0; step++) {
        Argus__V1__StepRecord *const *recs;
        uint64_t end;
        size_t n = diag_scn_next(s, &recs, &end);
        for (size_t i = 0; i < n; i++) {
            uint32_t k = (uint32_t)(recs[i]->rank / c->ranks_per_node);
            int64_t offset = sink->clock_offset ? sink->clock_offset(sink->ctx, k) : 0;
            scenario_define_names(ag[k].names, s, recs[i]);
            restamp_record(recs[i], offset); /* packed now: shifted back right after */
            batcher_add_step(ag[k].batcher, recs[i], clock_mono_ns());
            restamp_record(recs[i], -offset);
        }
        bool all = (step + 1) % c->steps_per_batch == 0 || step + 1 == steps;
        for (size_t i = 0; i < nagents && r == 0; i++)
            if (sink->seal_after ? sink->seal_after(sink->ctx, (uint32_t)i, step) : all)
                r = scenario_seal(sink, &ag[i], (uint32_t)i);
    }
    /* the ranks stopped early (liveness): what the agents hold goes out */
    for (size_t i = 0; i < nagents && r == 0 && steps < c->steps; i++)
        r = scenario_seal(sink, &ag[i], (uint32_t)i);
    return r;
}

struct scenario_live_ctx {
    const struct sim_config *c;
    const struct scenario_sink *sink;
};

/* liveness_emit_fn: seal b as agent's next batch, due at plan time due_ns. */
static int scenario_emit(void *ctx, uint32_t agent, uint64_t due_ns, Argus__V1__Batch *b)
{
    struct scenario_live_ctx *x = ctx;
    char id[64];
    void *frame;
    size_t len, raw_len;

    snprintf(id, sizeof(id), "%s%05u", x->c->agent_prefix, agent);
    b->agent_id = id;
    b->epoch = x->sink->epoch(x->sink->ctx, agent);
    b->seq = x->sink->next_seq(x->sink->ctx, agent);
    raw_len = argus__v1__batch__get_packed_size(b);
    uint8_t *raw = malloc(raw_len ? raw_len : 1);
    if (!raw)
        return -ENOMEM;
    argus__v1__batch__pack(b, raw);
    int r = frame_encode(raw, raw_len, FRAME_CODEC_LZ4, &frame, &len);
    free(raw);
    return r < 0 ? r : x->sink->push_at(x->sink->ctx, agent, b->seq, frame, len, due_ns);
}

/* The statuses of a liveness scenario after its last step. */
static int scenario_liveness(const struct sim_config *c, struct diag_scn *s, size_t k,
                             const struct diag_scn_config *dc, uint64_t steps,
                             const struct scenario_sink *sink)
{
    struct scenario_live_ctx x = {c, sink};
    struct liveness_plan p = {
        .kind = scenarios[k].live,
        .job = diag_scn_job(s),
        .ranks = (uint32_t)c->ranks,
        .ranks_per_node = (uint32_t)c->ranks_per_node,
        .culprit = dc->fault_rank,
        .step = steps,
        .stop_ns = c->rate > 0 ? (uint64_t)((double)steps / c->rate * 1e9) : 0,
        .unix0_ns = clock_real_ns(),
        .for_ns = c->liveness_for_ns,
        .seed = c->seed,
    };

    if (!sink->push_at)
        return -EINVAL;
    return liveness_generate(&p, s, scenario_emit, &x);
}

int scenario_generate(const struct sim_config *c, const struct scenario_sink *sink,
                      struct scenario_truth *truth)
{
    size_t k, nagents = (size_t)((c->ranks + c->ranks_per_node - 1) / c->ranks_per_node);
    struct diag_scn_config dc;
    struct scenario_agent *ag;
    struct diag_scn *s;
    int r = -ENOMEM;

    memset(truth, 0, sizeof(*truth));
    for (k = 0; k < NSCENARIOS && strcmp(scenarios[k].name, c->scenario) != 0; k++)
        ;
    if (k == NSCENARIOS)
        return -EINVAL;
    scenario_config(c, k, &dc);
    s = diag_scn_new(&dc);
    if (!s)
        return -EINVAL;
    ag = calloc(nagents, sizeof(*ag));
    for (size_t i = 0; ag && i < nagents; i++) {
        char id[64];
        snprintf(id, sizeof(id), "%s%05zu", c->agent_prefix, i);
        struct batcher_options bo = {id, 1u << 20, 64u << 20, UINT64_MAX};
        ag[i].names = names_new();
        ag[i].batcher = ag[i].names ? batcher_new(&bo, ag[i].names, NULL) : NULL;
        if (!ag[i].batcher)
            goto out;
        batcher_set_coding(ag[i].batcher, c->code_kernels);
    }
    bool live = scenarios[k].live != LIVENESS_NONE;
    uint64_t steps = live && c->onset < c->steps ? c->onset : c->steps;
    if (ag && scenario_truth_fill(c, s, k, &dc, truth) == 0)
        r = scenario_run(c, s, ag, nagents, sink, steps);
    if (r == 0 && live)
        r = scenario_liveness(c, s, k, &dc, steps, sink);
out:
    for (size_t i = 0; ag && i < nagents; i++) {
        batcher_free(ag[i].batcher);
        names_free(ag[i].names);
    }
    free(ag);
    diag_scn_free(s);
    return r;
}
