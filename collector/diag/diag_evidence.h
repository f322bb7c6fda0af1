/* Evidence text for diagnosis findings: numbers, not adjectives
 * ("forward 2,252 ms vs group median 11 ms, z = 41, persisted 38/40 steps").
 */
#ifndef ARGUS_COLLECTOR_DIAG_EVIDENCE_H
#define ARGUS_COLLECTOR_DIAG_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_rankwin.h"

typedef const char *(*diag_evidence_name_fn)(void *ctx, uint64_t name_id);

struct diag_namer {
    diag_evidence_name_fn fn;
    void *ctx;
    const struct diag_dict *dict;
};

/* Name of what flag f points at into buf ("forward", a kernel name, ...). */
const char *diag_evidence_where(const struct diag_namer *n, const struct diag_flag *f, char *buf,
                                size_t len);

/* Evidence for a rank flag of cause c that persisted hits/window steps,
 * followed by the rank's arrival order and host counters over the window
 * (re; NULL or empty: left out) and its hardware that stands out against
 * its peers' (diag_hw_sentence of re->hw, at most 319 bytes; none without
 * hw). */
void diag_evidence_flag(const struct diag_namer *n, const struct diag_flag *f, int cause,
                        const char *group, uint32_t hits, uint32_t window,
                        const struct diag_rank_evidence *re, char *buf, size_t len);

/* The window part alone: "arrived last at 41 of 50 collectives (12 expected
 * by chance), median 310 ms after the first; run queue 905 ms/step vs 320 ms
 * group median, off-CPU 12 ms/step vs 11 ms" into buf ("" when re has
 * neither matched collectives nor host counters). */
const char *diag_evidence_window(const struct diag_rank_evidence *re, char *buf, size_t len);

/* Name of name_id through the callback, or "name:<hex>". */
const char *diag_evidence_name(const struct diag_namer *n, uint64_t id, char *buf, size_t len);

/* Data skew: rotation over ranks and steps. */
void diag_evidence_skew(char *buf, size_t len, uint32_t ranks, uint32_t steps, uint32_t window);

/* What an L1 spike's latest rank showed. */
enum diag_spike_why {
    DIAG_SPIKE_HOST = 0,    /* phases normal: a host-side stall */
    DIAG_SPIKE_COMPUTE = 1, /* its compute was slow */
    DIAG_SPIKE_STARVED = 2, /* its threads waited for a CPU */
    DIAG_SPIKE_WORK = 3,    /* late with its host's counters normal: more work */
};

/* An L1 spike window and the rank that arrived latest in it. */
void diag_evidence_spike(char *buf, size_t len, uint64_t from, uint64_t to, double peak_ns,
                         double median_ns, uint32_t rank, double late_ns, int why);

/* A job regression: the L1 shift and what across the job confirms it. */
void diag_evidence_regression(char *buf, size_t len, double ratio, uint64_t since, const char *kind,
                              const char *where, double where_ratio, bool kernels_too);

#endif
