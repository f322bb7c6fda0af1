/* Simulated hardware counters (argus.v1.HwCounters, issue 29) for the step
 * records argus-sim makes: what the agent's NVML sampler would send for one
 * rank's GPU over one step. A healthy GPU runs at ~1,980 MHz, 60-70 C, one
 * sample per step, at its SW power cap (0x4) in about one step in ten, with
 * no errors: a few bytes on the wire. A thermally throttled GPU shows HW
 * thermal slowdown (0x40) in most steps at ~1,410 MHz and ~90 C; a
 * power-capped one the SW power cap in every step at ~1,750 MHz.
 *
 * Deterministic in (seed, step, rank), and independent of the generators'
 * own random streams: adding hw changes nothing else they make. */
#ifndef ARGUS_SIM_SIM_HW_H
#define ARGUS_SIM_SIM_HW_H

#include <stdint.h>

#include "proto/argus.pb-c.h"

enum sim_hw_state {
    SIM_HW_HEALTHY = 0,
    SIM_HW_THERMAL = 1,     /* HW thermal slowdown in most steps, slow clock, hot */
    SIM_HW_POWER_CAPPED = 2 /* SW power cap in every step */
};

/* Fill hw (initialised here) with rank's counters of step in state st. */
void sim_hw_fill(Argus__V1__HwCounters *hw, enum sim_hw_state st, uint64_t seed, uint64_t step,
                 uint32_t rank);

#endif
