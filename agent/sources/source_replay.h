/* The replay source: plays a recorded PyTorch profiler (Kineto) trace as if
 * its ranks ran on this node, so the whole pipeline (assembler, summarizer,
 * batcher, spool, exporter) runs without probes or a GPU. Every step of the
 * trace becomes a STEP event followed by its real kernel events; the trace
 * repeats until `steps` steps per rank were played. Each replayed rank gets
 * a synthetic pid (REPLAY_PID_BASE + index, beyond any pid the kernel
 * gives: liveness reads no /proc for it), announced with a RANK event; when
 * the last rank played its `steps`, every rank ends cleanly (PROC_EXIT).
 * `stretch` slows the replayed ranks' GPU work (kernel durations and their
 * offsets in the step) while steps keep coming at `rate`: a compute straggler
 * that stays in step, as in synchronous training, with real-looking spans. */
#ifndef ARGUS_AGENT_SOURCE_REPLAY_H
#define ARGUS_AGENT_SOURCE_REPLAY_H

#include <stdint.h>

#include "agent/sources/source.h"

/* A CLOCK_MONOTONIC timerfd (nonblocking) that first fires at first_ns and
 * then every period_ns, but at most every 25 ms: replays at faster rates
 * emit several steps per wakeup. Returns the fd or -errno. */
int replay_timerfd(uint64_t first_ns, uint64_t period_ns);

#define REPLAY_PID_BASE 0x40000000u

struct replay_config {
    const char *path;   /* Kineto JSON (.json or .json.gz) */
    const char *job;    /* job id of the replayed ranks */
    const char *node;   /* node name */
    uint32_t ranks;     /* ranks to play (each plays the whole trace) */
    uint32_t rank_base; /* global rank of the first */
    uint32_t world;     /* world size (0: ranks) */
    double rate;        /* steps per second per rank (> 0) */
    double stretch;     /* factor on kernel durations and in-step offsets (0: 1) */
    uint64_t steps;     /* steps per rank, 0 = forever */
};

extern const struct source_ops source_replay_ops;

#endif
