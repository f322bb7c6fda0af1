/* Evidence text: see diag_evidence.h. */
#include "collector/diag/diag_evidence.h"

#include <inttypes.h>
#include <stdio.h>

#include "collector/diag/diag_hw.h"
#include "collector/diag/diag_report.h"

const char *diag_evidence_name(const struct diag_namer *n, uint64_t id, char *buf, size_t len)
{
    const char *s = n->fn ? n->fn(n->ctx, id) : NULL;

    if (s && *s)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "name:%016" PRIx64, id);
    return buf;
}

const char *diag_evidence_where(const struct diag_namer *n, const struct diag_flag *f, char *buf,
                                size_t len)
{
    switch (f->kind) {
    case DIAG_WHERE_PHASE:
        return diag_evidence_name(n, n->dict->phase[f->index], buf, len);
    case DIAG_WHERE_KERNEL:
        return diag_evidence_name(n, n->dict->kernel[f->index], buf, len);
    case DIAG_WHERE_COLL:
        return diag_evidence_name(n, n->dict->coll[f->index], buf, len);
    case DIAG_WHERE_RUNQ:
        snprintf(buf, len, "cpu run queue");
        return buf;
    default:
        snprintf(buf, len, "collective arrival");
        return buf;
    }
}

const char *diag_evidence_window(const struct diag_rank_evidence *re, char *buf, size_t len)
{
    char a[32], b[32], c[32], d[32];
    size_t off = 0;

    buf[0] = 0;
    if (!re)
        return buf;
    if (re->part)
        off += (size_t)snprintf(
            buf, len, "arrived last at %u of %u collectives (%.0f expected by chance)%s%s%s",
            re->last, re->part, re->chance, re->last ? ", median " : "",
            re->last ? diag_fmt_ns(a, sizeof(a), re->gap_ns) : "",
            re->last ? " after the first" : "");
    if ((re->runq_ns > 0 || re->runq_median > 0) && off < len)
        off += (size_t)snprintf(buf + off, len - off, "%srun queue %s/step vs %s group median",
                                off ? "; " : "", diag_fmt_ns(a, sizeof(a), re->runq_ns),
                                diag_fmt_ns(b, sizeof(b), re->runq_median));
    if ((re->off_cpu_ns > 0 || re->off_cpu_median > 0) && off < len)
        snprintf(buf + off, len - off, "%soff-CPU %s/step vs %s", off ? ", " : "",
                 diag_fmt_ns(c, sizeof(c), re->off_cpu_ns),
                 diag_fmt_ns(d, sizeof(d), re->off_cpu_median));
    return buf;
}

/* The finding itself, without the window part. */
static void flag_text(const struct diag_namer *n, const struct diag_flag *f, int cause,
                      const char *group, char *buf, size_t len)
{
    char where[128], a[32], b[32], c[32];

    diag_evidence_where(n, f, where, sizeof(where));
    diag_fmt_ns(a, sizeof(a), f->value);
    diag_fmt_ns(b, sizeof(b), f->median);
    const char *more = cause == DIAG_CAUSE_IMBALANCE ? ": more work than its peers (the job's, "
                                                       "not the node's)"
                                                     : "";
    if (f->kind == DIAG_WHERE_KERNEL)
        snprintf(buf, len, "kernel %s mean %s vs %s reference %s, W1 = %.2f of reference mean%s%s",
                 where, a, f->group_wide ? "stage" : "group", b, f->score,
                 f->group_wide ? " (whole group slower than its stage)" : "",
                 *more ? ", launched with other shapes than its group's" : "");
    else if (f->group_wide)
        snprintf(buf, len, "group %s %s transfer %s vs %s median of its stage's groups (%.1fx)",
                 group, where, a, b, f->score);
    else if (cause == DIAG_CAUSE_HOST && f->kind == DIAG_WHERE_RUNQ)
        snprintf(buf, len,
                 "CPU-starved: threads waited %s for a CPU vs group median %s, z = %.0f, "
                 "off-CPU %s outside collectives",
                 a, b, f->score, diag_fmt_ns(c, sizeof(c), f->aux));
    else if (cause == DIAG_CAUSE_HOST)
        snprintf(buf, len,
                 "arrives %s late at collectives vs group median %s, z = %.0f, phases normal, "
                 "threads blocked off-CPU %s outside collectives, above its peers'",
                 a, b, f->score, diag_fmt_ns(c, sizeof(c), f->aux));
    else if (cause == DIAG_CAUSE_IMBALANCE && f->kind == DIAG_WHERE_ARRIVAL)
        snprintf(buf, len,
                 "arrives %s late at collectives vs group median %s, z = %.0f, with the host "
                 "counters of its peers (run queue, off-CPU %s outside collectives)%s",
                 a, b, f->score, diag_fmt_ns(c, sizeof(c), f->aux), more);
    else if (f->aux > 0)
        snprintf(buf, len, "%s %s vs group median %s, z = %.0f, own kernel time %.2fx group%s",
                 where, a, b, f->score, f->aux,
                 *more ? ", its kernels other shapes or more of them" : "");
    else
        snprintf(buf, len, "%s%s %s vs group median %s, z = %.0f%s", where,
                 cause == DIAG_CAUSE_LINK ? " transfer" : "", a, b, f->score, more);
}

void diag_evidence_flag(const struct diag_namer *n, const struct diag_flag *f, int cause,
                        const char *group, uint32_t hits, uint32_t window,
                        const struct diag_rank_evidence *re, char *buf, size_t len)
{
    char head[320], win[320], hw[320]; /* with the rest, under 1,000 bytes */

    flag_text(n, f, cause, group, head, sizeof(head));
    diag_evidence_window(re, win, sizeof(win));
    diag_hw_sentence(re ? &re->hw : NULL, cause, hw, sizeof(hw));
    snprintf(buf, len, "%s, persisted %u/%u steps%s%s%s", head, hits, window, win[0] ? "; " : "",
             win, hw);
}

void diag_evidence_skew(char *buf, size_t len, uint32_t ranks, uint32_t steps, uint32_t window)
{
    snprintf(buf, len,
             "slowness moved over %u ranks in %u/%u steps, none persisted: work imbalance "
             "(e.g. variable sequence length), not a bad rank",
             ranks, steps, window);
}

void diag_evidence_spike(char *buf, size_t len, uint64_t from, uint64_t to, double peak_ns,
                         double median_ns, uint32_t rank, double late_ns, int why)
{
    static const char *const words[] = {
        [DIAG_SPIKE_HOST] = "its phases normal: host-side stall",
        [DIAG_SPIKE_COMPUTE] = "its compute was slow",
        [DIAG_SPIKE_STARVED] = "its threads waited for a CPU: CPU-starved host",
        [DIAG_SPIKE_WORK] = "its host's counters normal: more work than its peers",
    };
    char a[32], b[32], c[32];

    snprintf(buf, len,
             "steps %" PRIu64 "-%" PRIu64 " took up to %s vs rolling median %s (%.1fx); rank %u "
             "arrived %s late at collectives, %s",
             from, to, diag_fmt_ns(a, sizeof(a), peak_ns), diag_fmt_ns(b, sizeof(b), median_ns),
             median_ns > 0 ? peak_ns / median_ns : 0, rank, diag_fmt_ns(c, sizeof(c), late_ns),
             words[why >= 0 && why <= DIAG_SPIKE_WORK ? why : DIAG_SPIKE_HOST]);
}

void diag_evidence_regression(char *buf, size_t len, double ratio, uint64_t since, const char *kind,
                              const char *where, double where_ratio, bool kernels_too)
{
    snprintf(buf, len,
             "step time %.2fx since step %" PRIu64 " (L1 change point on log T); %s%s %.2fx "
             "its history across the job%s",
             ratio, since, kind, where, where_ratio, kernels_too ? ", kernels too" : "");
}
