/* In-process scenario generator for the diagnosis engine tests: argus.v1
 * StepRecords of a synthetic data/tensor/pipeline-parallel job with one fault
 * class each (docs/design.md section 7 fault classes).
 *
 * The model is event-driven like the real thing: every collective is a sync
 * point of its communicator: each member's collective kernel starts when its
 * stream gets there and ends when the last member arrived plus the transfer
 * time, so a late rank's collective looks short and everyone else's long.
 * Phases are compute-stream spans (they include waits for TP collectives and
 * pipeline neighbours); kernels are summarised as clusters (count, sum, p50,
 * p99) like the agent's KDE summariser. Each node has its own clock offset.
 * Every record carries its GPU's hardware counters (sim_hw.h): healthy but
 * for the GPU a fault throttles.
 */
#ifndef ARGUS_SIM_DIAG_SCENARIO_H
#define ARGUS_SIM_DIAG_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

enum diag_scn_fault {
    DIAG_SCN_HEALTHY = 0,
    DIAG_SCN_COMPUTE_STRAGGLER, /* one rank's forward+backward 1.6x */
    DIAG_SCN_LINK_GROUP,        /* one DP communicator (a whole peer group) 3x transfer */
    DIAG_SCN_MASKED,            /* one rank's forward 1.3x; its collectives look faster */
    DIAG_SCN_PIPELINE,          /* PP=4: one stage-2 rank's backward 1.9x */
    DIAG_SCN_JIT,               /* rare 40x host stalls on random ranks */
    DIAG_SCN_DATA_SKEW,         /* a random rank 1.5-2x each step */
    DIAG_SCN_EVERYONE_SLOWER,   /* all compute 1.3x from fault_start */
    DIAG_SCN_SILENT,            /* fault_rank stops reporting at fault_start */
    DIAG_SCN_LINK_TP,           /* the TP communicator of fault_rank's replica 3x transfer */
    DIAG_SCN_HOST_STRAGGLER,    /* fault_rank's host stalls 30 ms before every step's work */
    DIAG_SCN_EXPERT_STRAGGLER,  /* needs ep > 1: fault_rank's expert phase 1.3x */
    DIAG_SCN_IMBALANCE,         /* fault_rank does 1.6x the work every step (a bigger batch):
                                 * 1.6x the kernels, each as fast as its peers', another
                                 * work id, host counters normal: a finding, not a page */
    DIAG_SCN_GPU_THROTTLED,     /* fault_rank's forward+backward 1.4x, its GPU at HW thermal
                                 * slowdown (1,410 MHz, 90 C) in most steps (sim_hw.h) */
    DIAG_SCN_POWER_CAPPED,      /* every GPU at its SW power cap in every step: no straggler */
};

struct diag_scn_config {
    enum diag_scn_fault fault;
    uint32_t ranks;       /* world size (64) */
    uint32_t tp, pp;      /* tensor and pipeline sizes; dp = ranks / (tp * pp) */
    uint32_t ep;          /* expert parallel size (ep = dp % ep), 0/1 = no experts */
    uint32_t fault_rank;  /* the culprit where there is one */
    uint32_t fault_tp;    /* LINK_GROUP: tp index of the slow DP communicator */
    uint64_t fault_start; /* first faulty step */
    uint64_t fault_end;   /* first healthy step again (0: the fault lasts) */
    uint64_t seed;
    double clock_skew_ns;  /* node clock offsets uniform in +-this (5 ms) */
    bool no_kernels;       /* leave kernel summaries out */
    uint32_t sample_every; /* duty cycle: kernels only every n-th step (0 = every step) */
    double noise;          /* relative jitter of every compute segment (0.02) */
    double factor;         /* slowdown of the faulty thing, 0 = the class default */
    const char *job;       /* job id (NULL: "scn-<fault>-<seed>") */
    uint64_t base_unix_ns; /* time of step 0 (0: a fixed date in 2027) */
};

struct diag_scn;

/* New generator (c copied). NULL on ENOMEM or a layout that does not divide. */
struct diag_scn *diag_scn_new(const struct diag_scn_config *c);
void diag_scn_free(struct diag_scn *s);

/* Resources of every rank, valid until diag_scn_free. */
Argus__V1__Resource *const *diag_scn_resources(struct diag_scn *s, size_t *n);

/* Simulate the next step. *out: this step's records in random rank order,
 * owned by the generator and valid until the next call. Returns their
 * number. *end_ns: when the step ended (latest true end over ranks). */
size_t diag_scn_next(struct diag_scn *s, Argus__V1__StepRecord *const **out, uint64_t *end_ns);

/* Name lookup callback for diag_options.name (ctx = the generator). */
const char *diag_scn_name(void *ctx, uint64_t id);

/* The job id of the scenario. */
const char *diag_scn_job(const struct diag_scn *s);

/* Collectives per step on a TP communicator (sequence step * this + i); a
 * DP communicator has one per step (sequence = step). */
#define DIAG_SCN_TP_COLLS 4

/* The communicators of rank as its collectives name them: its TP group's
 * (0 when tp < 2) and its DP group's (0 when dp < 2), with the names of
 * their calls. */
void diag_scn_comms(const struct diag_scn *s, uint32_t rank, uint64_t *tp_comm, uint64_t *dp_comm,
                    uint64_t *tp_name, uint64_t *dp_name);

/* Node clock offset of rank (ns) as injected. */
double diag_scn_clock_offset(const struct diag_scn *s, uint32_t rank);

#endif
