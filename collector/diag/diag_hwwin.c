/* Per-rank hardware window: see diag_hwwin.h. */
#include "collector/diag/diag_hwwin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_stats.h"
#include "common/array.h"

/* Peer arrays in the scratch: throttled share, clock, temperature, totals. */
#define PEER_ARRAYS (3 + DIAG_HW_N_COUNTERS)

void diag_hwwin_init(struct diag_hwwin *w, uint32_t window)
{
    memset(w, 0, sizeof(*w));
    w->window = window < 1 ? 1 : window > 64 ? 64 : window;
}

void diag_hwwin_free(struct diag_hwwin *w)
{
    free(w->slots);
    free(w->xid);
    free(w->scratch);
    diag_hwwin_init(w, w->window);
}

int diag_hwwin_reserve(struct diag_hwwin *w, uint32_t cap)
{
    if (cap <= w->cap)
        return 0;
    if (array_grow_zeroed((void **)&w->slots, (size_t)w->cap * w->window, (size_t)cap * w->window,
                          sizeof(*w->slots)) ||
        array_grow_zeroed((void **)&w->xid, w->cap, cap, sizeof(*w->xid)))
        return -ENOMEM;
    w->cap = cap;
    return 0;
}

void diag_hwwin_step(struct diag_hwwin *w, const struct diag_frame *f)
{
    uint32_t n = f->cap < w->cap ? f->cap : w->cap;

    w->head = (w->head + 1) % w->window;
    for (uint32_t r = 0; r < w->cap; r++) {
        struct diag_hw_step *s = &w->slots[(size_t)r * w->window + w->head];
        const struct diag_rank_step *rs = r < n ? &f->ranks[r] : NULL;
        if (!rs || !rs->present) {
            memset(s, 0, sizeof(*s));
            continue;
        }
        *s = rs->hw;
        if (rs->hw.xid_errors)
            w->xid[r] = (struct diag_hwwin_xid){.step = f->step, .code = rs->xid};
    }
}

/* What one rank's window slots add up to. */
struct sums {
    uint32_t steps, throttled, clocks, temps;
    uint32_t reason[DIAG_HW_N_REASONS]; /* throttled steps with each reason */
    double clock, temp;                 /* sums, then means */
    uint64_t total[DIAG_HW_N_COUNTERS];
};

static void add_slot(struct sums *m, const struct diag_hw_step *s)
{
    m->steps++;
    if (s->bits & DIAG_HW_THROTTLED) {
        m->throttled++;
        for (int i = 0; i < DIAG_HW_N_REASONS; i++)
            m->reason[i] += (s->bits >> i) & 1;
    }
    if (s->sm_clock_mhz) {
        m->clock += s->sm_clock_mhz;
        m->clocks++;
    }
    if (s->temperature_c) {
        m->temp += s->temperature_c;
        m->temps++;
    }
    m->total[DIAG_HW_XIDS] += s->xid_errors;
    m->total[DIAG_HW_ECC] += s->ecc_uncorrected;
    m->total[DIAG_HW_ROWS] += s->rows_remapped;
    m->total[DIAG_HW_PCIE] += s->pcie_replays;
    m->total[DIAG_HW_NVLINK] += s->nvlink_errors;
    m->total[DIAG_HW_NIC_ERRORS] += s->nic_errors;
    m->total[DIAG_HW_NIC_DROPS] += s->nic_drops;
    m->total[DIAG_HW_LINK_DOWNS] += s->nic_link_downs;
}

/* Sum rank's slots that have hw; returns the steps with hw. */
static uint32_t rank_sums(const struct diag_hwwin *w, uint32_t rank, struct sums *m)
{
    memset(m, 0, sizeof(*m));
    for (uint32_t i = 0; rank < w->cap && i < w->window; i++) {
        const struct diag_hw_step *s = &w->slots[(size_t)rank * w->window + i];
        if (s->bits & DIAG_HW_HAS)
            add_slot(m, s);
    }
    m->clock = m->clocks ? m->clock / m->clocks : 0;
    m->temp = m->temps ? m->temp / m->temps : 0;
    return m->steps;
}

static int scratch_reserve(struct diag_hwwin *w, uint32_t n)
{
    if (n <= w->scratch_n)
        return 0;
    if (array_grow_zeroed((void **)&w->scratch, 0, (size_t)n * PEER_ARRAYS, sizeof(double)))
        return -ENOMEM;
    w->scratch_n = n;
    return 0;
}

/* The rank's own part of the evidence. */
static void own_part(const struct sums *m, struct diag_hw_evidence *out)
{
    out->steps = m->steps;
    out->throttled = m->throttled;
    for (int i = 0; i < DIAG_HW_N_REASONS; i++)
        if (m->reason[i] > out->reason_steps) {
            out->reason_steps = m->reason[i];
            out->reason = 1u << i;
        }
    out->sm_clock = m->clock;
    out->temperature = m->temp;
    memcpy(out->total, m->total, sizeof(out->total));
}

/* Medians of the peers' sums: k of them, clocks and temps of them known. */
static void peer_part(double *v, uint32_t n, uint32_t k, uint32_t clocks, uint32_t temps,
                      struct diag_hw_evidence *out)
{
    out->peers = k;
    if (!k)
        return;
    out->peer_throttled = diag_stats_median_inplace(v, k);
    out->peer_sm_clock = clocks ? diag_stats_median_inplace(v + n, clocks) : 0;
    out->peer_temperature = temps ? diag_stats_median_inplace(v + 2 * (size_t)n, temps) : 0;
    for (int c = 0; c < DIAG_HW_N_COUNTERS; c++)
        out->peer_total[c] = diag_stats_median_inplace(v + (size_t)(3 + c) * n, k);
}

int diag_hwwin_get(struct diag_hwwin *w, uint32_t rank, const uint32_t *members, uint32_t n,
                   struct diag_hw_evidence *out)
{
    struct sums m;
    uint32_t k = 0, clocks = 0, temps = 0;

    memset(out, 0, sizeof(*out));
    if (rank >= w->cap || !rank_sums(w, rank, &m))
        return 0;
    own_part(&m, out);
    if (m.total[DIAG_HW_XIDS]) {
        out->xid = w->xid[rank].code;
        out->xid_step = w->xid[rank].step;
    }
    if (scratch_reserve(w, n))
        return -ENOMEM;
    double *v = w->scratch;
    for (uint32_t i = 0; members && i < n; i++) {
        if (members[i] == rank || !rank_sums(w, members[i], &m))
            continue;
        v[k] = (double)m.throttled / m.steps;
        if (m.clock > 0)
            v[n + clocks++] = m.clock;
        if (m.temp > 0)
            v[2 * (size_t)n + temps++] = m.temp;
        for (int c = 0; c < DIAG_HW_N_COUNTERS; c++)
            v[(size_t)(3 + c) * n + k] = (double)m.total[c];
        k++;
    }
    peer_part(v, n, k, clocks, temps, out);
    out->was_throttled = w->xid[rank].throttled;
    w->xid[rank].throttled = diag_hw_throttled(out);
    return 0;
}
