/* Hardware evidence of diagnosis (docs/design.md section 7, Hardware
 * evidence): it takes in the argus.v1.HwCounters of a step record (the
 * agent's NVML and NIC counters of one rank over one step) and gives out
 * a compact per-step summary (diag_hw_extract, kept by diag_frame.h and the
 * window of diag_hwwin.h), and, from a rank's window against its peers'
 * (struct diag_hw_evidence, filled by diag_hwwin_get), the GPU_THROTTLED
 * rule (diag_hw_cause) and the sentence a suspect's evidence gains
 * (diag_hw_sentence): "GPU: HW thermal slowdown in 38 of 40 steps, SM
 * clock 1,410 vs 1,980 MHz (peers' median), 91 C vs 66 C".
 *
 * Pure functions over the caller's structs: no allocation, thread-safe.
 */
#ifndef ARGUS_COLLECTOR_DIAG_HW_H
#define ARGUS_COLLECTOR_DIAG_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Bits of diag_hw_step.bits: the slowdown reasons, compacted from NVML's
 * clock-event reason bits (HwCounters.throttle), then two flags. */
#define DIAG_HW_SW_POWER_CAP 0x01 /* NVML 0x4 */
#define DIAG_HW_HW_SLOWDOWN 0x02  /* NVML 0x8 */
#define DIAG_HW_SW_THERMAL 0x04   /* NVML 0x20 */
#define DIAG_HW_HW_THERMAL 0x08   /* NVML 0x40 */
#define DIAG_HW_POWER_BRAKE 0x10  /* NVML 0x80 */
#define DIAG_HW_REASONS 0x1f
#define DIAG_HW_N_REASONS 5
#define DIAG_HW_THROTTLED 0x20 /* the GPU was slowed in this step (diag_hw_extract) */
#define DIAG_HW_HAS 0x40       /* the record carried hw */

/* NVML's slowdown reason bits (nvmlClocksEventReason*): the ones that
 * make a step throttled when the agent took no samples. */
#define DIAG_HW_NVML_SLOWDOWN (0x4u | 0x8u | 0x20u | 0x40u | 0x80u)

/* One rank's hardware in one step, 16 bytes: counts saturate. */
struct diag_hw_step {
    uint8_t bits;          /* DIAG_HW_* */
    uint8_t temperature_c; /* 0: unknown */
    uint16_t sm_clock_mhz; /* mean of the step's samples, 0: unknown */
    uint8_t xid_errors;
    uint8_t ecc_uncorrected;
    uint8_t rows_remapped;
    uint8_t nic_link_downs;
    uint16_t pcie_replays;
    uint16_t nvlink_errors;
    uint16_t nic_errors;
    uint16_t nic_drops;
};

/* Window totals that a rank's evidence compares with its peers'. */
enum diag_hw_counter {
    DIAG_HW_XIDS = 0,
    DIAG_HW_ECC = 1,
    DIAG_HW_ROWS = 2,
    DIAG_HW_PCIE = 3,
    DIAG_HW_NVLINK = 4,
    DIAG_HW_NIC_ERRORS = 5,
    DIAG_HW_NIC_DROPS = 6,
    DIAG_HW_LINK_DOWNS = 7,
    DIAG_HW_N_COUNTERS = 8,
};

/* A rank's hardware over the window against its peers: the other present
 * members of its peer group that have steps with hw. All zero: no hw. */
struct diag_hw_evidence {
    uint32_t steps;        /* window steps of the rank with hw */
    uint32_t throttled;    /* of them throttled */
    uint32_t reason;       /* DIAG_HW_* reason most often in its throttled steps (0: none) */
    uint32_t reason_steps; /* throttled steps with that reason */
    double sm_clock;       /* mean SM clock, MHz, over steps that had one (0: unknown) */
    double temperature;    /* mean temperature, C (0: unknown) */
    uint64_t total[DIAG_HW_N_COUNTERS];    /* the rank's window totals */
    uint32_t xid;                          /* the last XID code in the window (total[XIDS] > 0) */
    uint64_t xid_step;                     /* the step it came in */
    uint32_t peers;                        /* peers with hw steps; 0: the medians are 0 */
    double peer_throttled;                 /* median of the peers' throttled shares of steps */
    double peer_sm_clock;                  /* median of the peers' mean SM clocks (0: unknown) */
    double peer_temperature;               /* median of the peers' mean temperatures */
    double peer_total[DIAG_HW_N_COUNTERS]; /* medians of the peers' window totals */
    bool was_throttled; /* diag_hw_throttled held at the rank's last evidence (hysteresis) */
};

/* Summarise hw (NULL: the record had none: *out zeroed, *xid 0) into *out:
 * throttled when throttled_samples * 2 >= samples (samples > 0), else when
 * any slowdown bit (DIAG_HW_NVML_SLOWDOWN) is set; counts saturate at the
 * field's maximum. *xid: the last XID code of the step (0: none). */
void diag_hw_extract(const Argus__V1__HwCounters *hw, struct diag_hw_step *out, uint32_t *xid);

/* The GPU_THROTTLED rule: the rank's GPU was throttled in half or more of
 * its window steps with hw (a quarter or more when was_throttled), the
 * median peer's in under a quarter of theirs, and its mean SM clock (when it and the peers' are
 * known) is at most 0.95 of the peers' median. False without peers. */
bool diag_hw_throttled(const struct diag_hw_evidence *e);

/* The argus.v1.Cause a persisted suspect of cause index c (diag_persist.h)
 * reports: GPU_THROTTLED for a COMPUTE suspect that diag_hw_throttled
 * says was throttled, else causes_persisted(c). e NULL: causes_persisted(c). */
Argus__V1__Cause diag_hw_cause(int c, const struct diag_hw_evidence *e);

/* Every cause diag_hw_cause may report for cause index c, as a bit set
 * (1u << Argus__V1__Cause): what a recovery of (rank, c) ends. */
uint32_t diag_hw_causes(int c);

/* The hardware sentence of a suspect of cause index c into buf: the
 * clauses that stand out against the peers, each "; " first ("; GPU: HW
 * thermal slowdown in 38 of 40 steps, SM clock 1,410 vs 1,980 MHz (peers'
 * median), 91 C vs 66 C; PCIe replays 1,204 vs 0; node NICs: 1,234 drops
 * and 2 link downs over the window vs 0 (peers' median)"), the NICs first
 * for a LINK suspect. A clause that does not fit in len is left out with
 * those after it (never cut in the middle). "" when nothing stands out or
 * e has no steps with hw. Returns buf. */
const char *diag_hw_sentence(const struct diag_hw_evidence *e, int c, char *buf, size_t len);

#endif
