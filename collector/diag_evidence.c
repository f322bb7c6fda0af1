/* Evidence text: see diag_evidence.h. */
#include "collector/diag_evidence.h"

#include <inttypes.h>
#include <stdio.h>

#include "collector/diag_report.h"

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
    default:
        snprintf(buf, len, "collective arrival");
        return buf;
    }
}

void diag_evidence_flag(const struct diag_namer *n, const struct diag_flag *f, int cause,
                        const char *group, uint32_t hits, uint32_t window, char *buf, size_t len)
{
    char where[128], a[32], b[32], c[32];

    diag_evidence_where(n, f, where, sizeof(where));
    diag_fmt_ns(a, sizeof(a), f->value);
    diag_fmt_ns(b, sizeof(b), f->median);
    if (f->kind == DIAG_WHERE_KERNEL)
        snprintf(buf, len,
                 "kernel %s mean %s vs %s reference %s, W1 = %.2f of reference mean%s, "
                 "persisted %u/%u steps",
                 where, a, f->group_wide ? "stage" : "group", b, f->score,
                 f->group_wide ? " (whole group slower than its stage)" : "", hits, window);
    else if (f->group_wide)
        snprintf(buf, len,
                 "group %s %s transfer %s vs %s median of its stage's groups (%.1fx), "
                 "persisted %u/%u steps",
                 group, where, a, b, f->score, hits, window);
    else if (cause == DIAG_CAUSE_HOST)
        snprintf(buf, len,
                 "arrives %s late at collectives vs group median %s, z = %.0f, phases normal, "
                 "off-CPU %s, persisted %u/%u steps",
                 a, b, f->score, diag_fmt_ns(c, sizeof(c), f->aux), hits, window);
    else if (cause == DIAG_CAUSE_COMPUTE && f->aux > 0)
        snprintf(buf, len,
                 "%s %s vs group median %s, z = %.0f, own kernel time %.2fx group, "
                 "persisted %u/%u steps",
                 where, a, b, f->score, f->aux, hits, window);
    else
        snprintf(buf, len, "%s%s %s vs group median %s, z = %.0f, persisted %u/%u steps", where,
                 cause == DIAG_CAUSE_LINK ? " transfer" : "", a, b, f->score, hits, window);
}
