/* Simulated hardware counters: see sim_hw.h. */
#include "tools/argus-sim/sim_hw.h"

#define NVML_SW_POWER_CAP 0x4u
#define NVML_HW_THERMAL 0x40u

/* splitmix64: one 64-bit draw per (seed, step, rank, i). */
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Uniform [0, 1) draw i of (seed, step, rank). */
static double draw(uint64_t seed, uint64_t step, uint32_t rank, unsigned i)
{
    uint64_t h = mix(seed ^ mix(step * 0x100000001B3ULL ^ ((uint64_t)rank << 32) ^ (i * 0x51ED)));

    return (double)(h >> 11) / 9007199254740992.0;
}

void sim_hw_fill(Argus__V1__HwCounters *hw, enum sim_hw_state st, uint64_t seed, uint64_t step,
                 uint32_t rank)
{
    double a = draw(seed, step, rank, 0), b = draw(seed, step, rank, 1);
    double c = draw(seed, step, rank, 2);

    argus__v1__hw_counters__init(hw);
    hw->samples = 1;
    hw->sm_clock_mhz = (uint32_t)(1965 + 30 * b);
    hw->temperature_c = 60 + rank % 8 + (uint32_t)(3 * c);
    if (st == SIM_HW_THERMAL && a < 0.9) {
        hw->throttle = NVML_HW_THERMAL;
        hw->sm_clock_mhz = (uint32_t)(1390 + 40 * b);
        hw->temperature_c = 88 + (uint32_t)(4 * c);
    } else if (st == SIM_HW_THERMAL) {
        hw->sm_clock_mhz = (uint32_t)(1580 + 40 * b);
        hw->temperature_c = 86 + (uint32_t)(3 * c);
    } else if (st == SIM_HW_POWER_CAPPED || a < 0.1) {
        hw->throttle = NVML_SW_POWER_CAP;
        hw->sm_clock_mhz -= st == SIM_HW_POWER_CAPPED ? 230 : 60;
    }
    hw->throttled_samples = hw->throttle ? hw->samples : 0;
}
