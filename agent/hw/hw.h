/* agent/hw/: the hardware under each rank's steps (issue 29). A GPU
 * throttled for power or heat, an XID, ECC errors or PCIe replays, a NIC
 * dropping packets: the commonest causes of a compute or link straggler
 * that the kernels and collectives alone only show as "slow".
 *
 * Takes in: NVML (nvml.h, dlopen'ed: no driver, no GPU counters) and the
 * node's NICs (nic.h), sampled on a thread of its own every interval
 * (NVML can block for seconds on a failing GPU: never the main loop).
 * Gives out: for each step record of a rank, its HwCounters
 * (proto/argus.proto): the deltas of its GPU's and the node's NICs'
 * counters since the rank's previous record, and what the samples between
 * the two saw (throttle reasons, mean SM clock, temperature).
 *
 *   nvml.h  the GPUs, by dlopen
 *   nic.h   sysfs and qdisc counters
 *   hw.h    (here) the sampler thread and the per-rank deltas
 *
 * A rank's GPU is found by Resource.gpu_uuid when it has one, else by its
 * CUDA index taken as the NVML index (the same order unless
 * CUDA_DEVICE_ORDER=FASTEST_FIRST picks otherwise on a mixed node). A rank
 * with no GPU (-1) gets the NIC counters only.
 *
 * Threads: hw_track and hw_step from one thread (the agent's main loop);
 * the sampler publishes under a mutex held for a copy.
 */
#ifndef ARGUS_AGENT_HW_HW_H
#define ARGUS_AGENT_HW_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define HW_RANKS_MAX 1024 /* ranks with a baseline (a node runs a few dozen) */

struct hw_options {
    bool gpus;            /* read NVML (hw.nvml) */
    const char *nvml_lib; /* hw.nvml_lib (NULL or "": nvml.h's default) */
    bool nics;            /* read the NICs (hw.nics) */
    const char *nic_list; /* hw.nic_list (NULL or "": every one but lo) */
    const char *sysroot;  /* NULL: "/sys" (tests: a fake tree) */
    uint64_t interval_ns; /* hw.interval: between samples (>= 10 ms) */
};

struct hw_stats {
    uint32_t gpus;       /* GPUs NVML found (0: no NVML) */
    uint32_t nics;       /* interfaces and IB ports at the last sample */
    uint64_t samples;    /* samples taken */
    uint64_t gpu_errors; /* GPU samples that did not answer */
    uint64_t nic_errors; /* NIC samples that read nothing */
    uint64_t sample_ns;  /* the last sample's duration */
    uint64_t unmatched;  /* step records whose rank's GPU NVML does not have */
};

struct hw;

/* The stage with o (copied; strings too). Looks for NVML and the NICs at
 * once and logs once what it found ("hw: 8 GPUs (NVML 12.535...)", "hw: no
 * GPU counters: libnvidia-ml.so.1: cannot open ..."). NULL only on ENOMEM
 * or an invalid option (why). */
struct hw *hw_new(const struct hw_options *o, char *why, size_t whylen);

/* Start the sampler thread (a first sample is taken before it returns, so
 * the first step has a baseline). 0 or -errno. Nothing to sample: 0, no
 * thread. */
int hw_start(struct hw *h);

/* Stop the thread and free. NULL is fine. */
void hw_free(struct hw *h);

/* Rank `rank` of job (copied) runs on GPU gpu (its CUDA index, -1: none;
 * uuid "" or NULL when unknown): its next hw_step is a baseline. Again for
 * a known rank (a restart): a new baseline. Ranks are kept up to
 * HW_RANKS_MAX; the one stepped least recently makes room. */
void hw_track(struct hw *h, const char *job, uint32_t rank, int32_t gpu, const char *uuid);

/* The HwCounters of the rank's step ending now into *out (initialised by
 * the caller): deltas since its previous hw_step, what the samples in
 * between saw. Returns true when out holds something; false for the
 * rank's first step (the baseline), a rank never tracked (tracked now
 * with no GPU: the NICs only from its next step) or nothing to read. */
bool hw_step(struct hw *h, const char *job, uint32_t rank, Argus__V1__HwCounters *out);

void hw_get_stats(struct hw *h, struct hw_stats *out);

#endif
