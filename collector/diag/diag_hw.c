/* Hardware evidence: see diag_hw.h. */
#include "collector/diag/diag_hw.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "collector/diag/diag_persist.h"
#include "common/causes.h"

/* NVML reason bit of each compacted DIAG_HW_* reason bit, and its words. */
static const struct {
    uint32_t nvml;
    const char *word;
} reasons[DIAG_HW_N_REASONS] = {
    {0x4, "SW power cap"},         {0x8, "HW slowdown"},     {0x20, "SW thermal slowdown"},
    {0x40, "HW thermal slowdown"}, {0x80, "HW power brake"},
};

#define THROTTLED_MIN 0.5   /* the rank: throttled in at least this share of its steps */
#define PEER_THROTTLED 0.25 /* the median peer: in under this share */
#define THROTTLED_KEEP 0.25 /* found throttled at its last report: this share keeps it so */
#define CLOCK_RATIO 0.95    /* the rank's mean SM clock at most this of the peers' median */
#define HOT_C 10            /* a temperature this far above the peers' stands out alone */

static uint8_t sat8(uint64_t v)
{
    return v > UINT8_MAX ? UINT8_MAX : (uint8_t)v;
}

static uint16_t sat16(uint64_t v)
{
    return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

void diag_hw_extract(const Argus__V1__HwCounters *hw, struct diag_hw_step *out, uint32_t *xid)
{
    memset(out, 0, sizeof(*out));
    *xid = 0;
    if (!hw)
        return;
    out->bits = DIAG_HW_HAS;
    for (int i = 0; i < DIAG_HW_N_REASONS; i++)
        if (hw->throttle & reasons[i].nvml)
            out->bits |= (uint8_t)(1u << i);
    bool throttled = hw->samples ? (uint64_t)hw->throttled_samples * 2 >= hw->samples
                                 : (hw->throttle & DIAG_HW_NVML_SLOWDOWN) != 0;
    if (throttled)
        out->bits |= DIAG_HW_THROTTLED;
    out->temperature_c = sat8(hw->temperature_c);
    out->sm_clock_mhz = sat16(hw->sm_clock_mhz);
    out->xid_errors = sat8(hw->xid_errors);
    out->ecc_uncorrected = sat8(hw->ecc_uncorrected);
    out->rows_remapped = sat8(hw->rows_remapped);
    out->nic_link_downs = sat8(hw->nic_link_downs);
    out->pcie_replays = sat16(hw->pcie_replays);
    out->nvlink_errors = sat16(hw->nvlink_errors);
    out->nic_errors = sat16(hw->nic_errors);
    out->nic_drops = sat16(hw->nic_drops);
    *xid = hw->xid_errors ? hw->xid : 0;
}

/* Throttled in half its steps or more (a quarter when it was found so at
 * its last report: a GPU throttled about half the time keeps one cause, so
 * its alert does not flip between compute and GPU_THROTTLED), the median
 * peer in under a quarter. */
static bool throttle_stands_out(const struct diag_hw_evidence *e)
{
    double min = e->was_throttled ? THROTTLED_KEEP : THROTTLED_MIN;

    return e->steps && e->peers && e->throttled >= min * e->steps &&
           e->peer_throttled < PEER_THROTTLED;
}

static bool clock_known(const struct diag_hw_evidence *e)
{
    return e->sm_clock > 0 && e->peers && e->peer_sm_clock > 0;
}

static bool clock_stands_out(const struct diag_hw_evidence *e)
{
    return clock_known(e) && e->sm_clock <= CLOCK_RATIO * e->peer_sm_clock;
}

bool diag_hw_throttled(const struct diag_hw_evidence *e)
{
    return throttle_stands_out(e) && (!clock_known(e) || clock_stands_out(e));
}

Argus__V1__Cause diag_hw_cause(int c, const struct diag_hw_evidence *e)
{
    if (c == DIAG_CAUSE_COMPUTE && e && diag_hw_throttled(e))
        return ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED;
    return causes_persisted(c);
}

uint32_t diag_hw_causes(int c)
{
    uint32_t set = 1u << causes_persisted(c);

    if (c == DIAG_CAUSE_COMPUTE)
        set |= 1u << ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED;
    return set;
}

/* v with thousands separators ("1,204"). */
static const char *fmt_count(char *buf, size_t len, uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
    size_t o = 0;

    for (int i = 0; i < n && o + 1 < len; i++) {
        if (i && (n - i) % 3 == 0 && o + 2 < len)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o < len ? o : len - 1] = 0;
    return buf;
}

/* A total stands out: above the peers' median by enough (floor: the
 * least excess that counts, 1 for rare events, more for noisy counters). */
static bool total_stands_out(const struct diag_hw_evidence *e, int k, double floor)
{
    double own = (double)e->total[k], peer = e->peer_total[k];

    return own > peer && own - peer >= floor && (floor <= 1 || own >= 2 * peer);
}

/* Append ", " (or "") and the text to a clause being built. */
static void item(char *buf, size_t len, size_t *off, const char *text)
{
    int n = snprintf(buf + *off, len - *off, "%s%s", *off ? ", " : "", text);

    *off = n < 0 || (size_t)n >= len - *off ? len - 1 : *off + (size_t)n;
}

/* "HW thermal slowdown in 38 of 40 steps" (or "throttled in 39 of 40
 * steps, HW thermal slowdown in 38" when reasons were mixed). */
static void throttle_item(const struct diag_hw_evidence *e, char *buf, size_t len, size_t *off)
{
    char t[160];
    int r = 0;

    while (r < DIAG_HW_N_REASONS && e->reason != (1u << r))
        r++;
    if (r == DIAG_HW_N_REASONS)
        snprintf(t, sizeof(t), "throttled in %u of %u steps", e->throttled, e->steps);
    else if (e->reason_steps == e->throttled)
        snprintf(t, sizeof(t), "%s in %u of %u steps", reasons[r].word, e->throttled, e->steps);
    else
        snprintf(t, sizeof(t), "throttled in %u of %u steps, %s in %u", e->throttled, e->steps,
                 reasons[r].word, e->reason_steps);
    item(buf, len, off, t);
}

/* The GPU clause's items: throttling, clock, temperature, XID, ECC, rows. */
static void gpu_clause(const struct diag_hw_evidence *e, char *buf, size_t len)
{
    char t[160], a[24], b[24];
    size_t off = 0;
    bool thr = throttle_stands_out(e), clk = clock_stands_out(e);

    buf[0] = 0;
    if (thr)
        throttle_item(e, buf, len, &off);
    if (clk) {
        snprintf(t, sizeof(t), "SM clock %s vs %s MHz (peers' median)",
                 fmt_count(a, sizeof(a), (uint64_t)(e->sm_clock + 0.5)),
                 fmt_count(b, sizeof(b), (uint64_t)(e->peer_sm_clock + 0.5)));
        item(buf, len, &off, t);
    }
    if (e->temperature > 0 && e->peers && e->peer_temperature > 0 &&
        (e->temperature >= e->peer_temperature + HOT_C ||
         ((thr || clk) && e->temperature > e->peer_temperature))) {
        snprintf(t, sizeof(t), "%.0f C vs %.0f C", e->temperature, e->peer_temperature);
        item(buf, len, &off, t);
    }
    if (total_stands_out(e, DIAG_HW_XIDS, 1)) {
        int n = snprintf(t, sizeof(t), "XID %u at step %" PRIu64, e->xid, e->xid_step);
        if (e->total[DIAG_HW_XIDS] > 1)
            snprintf(t + n, sizeof(t) - (size_t)n, " (%" PRIu64 " XID events)",
                     e->total[DIAG_HW_XIDS]);
        item(buf, len, &off, t);
    }
    if (total_stands_out(e, DIAG_HW_ECC, 1)) {
        snprintf(t, sizeof(t), "%s uncorrected ECC errors",
                 fmt_count(a, sizeof(a), e->total[DIAG_HW_ECC]));
        item(buf, len, &off, t);
    }
    if (total_stands_out(e, DIAG_HW_ROWS, 1)) {
        snprintf(t, sizeof(t), "%s rows remapped", fmt_count(a, sizeof(a), e->total[DIAG_HW_ROWS]));
        item(buf, len, &off, t);
    }
}

/* "PCIe replays 1,204 vs 0" for counter k when it stands out. */
static void versus_clause(const struct diag_hw_evidence *e, int k, const char *what, char *buf,
                          size_t len)
{
    char a[24], b[24];

    buf[0] = 0;
    if (total_stands_out(e, k, 10))
        snprintf(buf, len, "%s %s vs %s", what, fmt_count(a, sizeof(a), e->total[k]),
                 fmt_count(b, sizeof(b), (uint64_t)(e->peer_total[k] + 0.5)));
}

/* "node NICs: 1,234 drops and 2 link downs over the window vs 0 (peers'
 * median)": the NIC counters that stand out, the peers' medians after. */
static void nic_clause(const struct diag_hw_evidence *e, char *buf, size_t len)
{
    static const char *const what[] = {"errors", "drops", "link downs"};
    char own[3][48], peer[3][24], a[24];
    int n = 0;
    bool zero = true;

    buf[0] = 0;
    for (int i = 0; i < 3; i++) {
        int k = DIAG_HW_NIC_ERRORS + i;
        if (!total_stands_out(e, k, k == DIAG_HW_LINK_DOWNS ? 1 : 10))
            continue;
        snprintf(own[n], sizeof(own[n]), "%s %s", fmt_count(a, sizeof(a), e->total[k]), what[i]);
        fmt_count(peer[n], sizeof(peer[n]), (uint64_t)(e->peer_total[k] + 0.5));
        zero = zero && e->peer_total[k] < 0.5;
        n++;
    }
    if (n == 0)
        return;
    if (zero || n == 1)
        snprintf(buf, len, "node NICs: %s%s%s%s%s over the window vs %s (peers' median)", own[0],
                 n > 1 ? (n > 2 ? ", " : " and ") : "", n > 1 ? own[1] : "", n > 2 ? " and " : "",
                 n > 2 ? own[2] : "", peer[0]);
    else
        snprintf(buf, len, "node NICs: %s%s%s%s%s over the window vs %s%s%s%s%s (peers' medians)",
                 own[0], n > 2 ? ", " : " and ", own[1], n > 2 ? " and " : "", n > 2 ? own[2] : "",
                 peer[0], n > 2 ? ", " : " and ", peer[1], n > 2 ? " and " : "",
                 n > 2 ? peer[2] : "");
}

/* Append "; " and clause to buf when all of it fits; false when it did not
 * (the clauses after it are left out too). */
static bool append(char *buf, size_t len, size_t *off, const char *prefix, const char *clause)
{
    size_t need = 2 + strlen(prefix) + strlen(clause);

    if (!clause[0])
        return true;
    if (*off + need + 1 > len)
        return false;
    *off += (size_t)snprintf(buf + *off, len - *off, "; %s%s", prefix, clause);
    return true;
}

const char *diag_hw_sentence(const struct diag_hw_evidence *e, int c, char *buf, size_t len)
{
    char gpu[400], pcie[80], nvl[80], nic[240];
    size_t off = 0;

    if (!len)
        return buf;
    buf[0] = 0;
    if (!e || !e->steps)
        return buf;
    gpu_clause(e, gpu, sizeof(gpu));
    versus_clause(e, DIAG_HW_PCIE, "PCIe replays", pcie, sizeof(pcie));
    versus_clause(e, DIAG_HW_NVLINK, "NVLink errors", nvl, sizeof(nvl));
    nic_clause(e, nic, sizeof(nic));
    if (c == DIAG_CAUSE_LINK) /* the network's evidence first */
        (void)(append(buf, len, &off, "", nic) && append(buf, len, &off, "", nvl) &&
               append(buf, len, &off, "", pcie) && append(buf, len, &off, "GPU: ", gpu));
    else
        (void)(append(buf, len, &off, "GPU: ", gpu) && append(buf, len, &off, "", pcie) &&
               append(buf, len, &off, "", nvl) && append(buf, len, &off, "", nic));
    return buf;
}
