/* argus-sim: speaks the real protocol as N ranks spread over K agent
 * streams, with deterministic content, at-least-once delivery from an
 * in-memory spool, and reconnects with backoff. */
#ifndef ARGUS_SIM_SIM_H
#define ARGUS_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/argus-sim/gen.h"

struct sim_config {
    char *collector;
    char *collector_set; /* "": send to collector; else the job's primary and standby */
    uint64_t epoch;      /* of every stream; 0: now (not an option: sim_set.h sets it) */
    char *job;
    uint64_t ranks;
    uint64_t ranks_per_node;
    uint64_t steps;
    double rate; /* steps per second per rank; 0 = as fast as acks allow */
    uint64_t seed;
    uint64_t steps_per_batch;
    uint64_t threads;
    uint64_t step_ns;      /* nominal step time written into records */
    uint64_t base_unix_ns; /* job start written into records (main sets it) */
    uint64_t timeout;      /* ns; give up after */
    uint64_t max_inflight; /* batches an agent keeps unacked before it stops generating */
    uint64_t tp, pp;
    bool verify;
    bool pregen;       /* seal every batch before the clock starts (benchmarks) */
    bool code_kernels; /* kernel groups coded as an agent codes them (common/kernel_code.h) */
    char *agent_prefix;
    char *record;             /* write the records to this file instead of sending (record.h) */
    bool record_split;        /* one record file per node: record.node<i> */
    bool hw;                  /* records carry hardware counters (sim_hw.h) */
    char *scenario;           /* "" = plain records (gen.h); else a fault scenario (scenario.h) */
    uint64_t onset;           /* first faulty step */
    uint64_t fault_end;       /* first healthy step again, 0 = never */
    double severity;          /* slowdown factor of the fault, 0 = the scenario's default */
    int64_t fault_rank;       /* culprit rank, -1 = the scenario's choice */
    uint64_t liveness_for_ns; /* how long a hang or checkpoint lasts (liveness.h) */
    /* delivery (tools/argus-sim/delivery.h) */
    int delivery; /* enum delivery_mode */
    uint64_t max_age_ns, batch_max_steps;
    uint64_t start_spread_ns, delay_ns, jitter_ns;
    char *stall, *outage, *clock_offset; /* "NODE:AT:SECONDS,...", "NODE:SECONDS,..." */
    int outage_replay;                   /* enum sim_replay */
    double overload, capacity;           /* --overload FACTOR of capacity rank-steps/s */
    char *send_log;                      /* "" = none */
};

/* How a stream replays its spool after an outage: under its own (epoch,
 * seq), as the agent's spool does, or under a new epoch (an agent that lost
 * its spool identity: the collector can only tell duplicates by content). */
enum sim_replay {
    SIM_REPLAY_SAME = 0,
    SIM_REPLAY_NEW_EPOCH = 1,
};

struct sim_result {
    uint64_t batches_sent, batches_acked, rank_steps_acked, resent, reconnects, rejects;
    double elapsed_s;
    uint64_t start_unix_ns; /* when sending started (after pre-generation) */
    double ack_latency_p50_ms, ack_latency_p99_ms;
    bool complete;
    char last_error[256];
    const char *truth_cause; /* scenario ground truth */
    uint32_t *culprits;      /* malloc'd */
    size_t nculprits;
};

/* Stream the job to the collector. Returns 0 when every batch was acked. */
int sim_run(const struct sim_config *c, struct sim_result *out);

/* Query the collector and check every (rank, step) is stored exactly once
 * with the content that was sent. Prints findings; returns 0 when all good. */
int sim_verify(const struct sim_config *c);

/* The job start time used in records (deterministic). */
uint64_t sim_base_unix_ns(const struct sim_config *c);

#endif
