/* Pipeline waits: see diag_pipeline.h. */
#include "collector/diag/diag_pipeline.h"

#include <errno.h>
#include <stdlib.h>

struct cand {
    uint64_t key; /* dp, tp, phase */
    uint32_t pp;
    uint32_t rank;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->pp < y->pp ? -1 : x->pp > y->pp;
}

static bool waiting_candidate(const struct diag_flag *f)
{
    return f->set && f->level == ARGUS__V1__LEVEL__LEVEL_L2_PHASE && f->kind == DIAG_WHERE_PHASE &&
           f->aux == 0 && !f->expert;
}

/* In one run of candidates (same pipeline, same phase, by stage), keep the
 * culprit's flag and clear the others. */
static int settle(const struct cand *c, size_t n, bool backward, struct diag_flag *flags)
{
    size_t keep = backward ? n - 1 : 0;

    for (size_t i = 0; i < n; i++)
        if (i != keep)
            flags[(size_t)c[i].rank * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set = false;
    return (int)n - 1;
}

int diag_pipeline_resolve(const struct diag_coord *coords, uint32_t n, const struct diag_dict *d,
                          struct diag_flag *flags)
{
    size_t m = 0;
    int cleared = 0;

    for (uint32_t r = 0; r < n; r++)
        m += coords[r].known &&
             waiting_candidate(&flags[(size_t)r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE]);
    if (m < 2)
        return 0;
    struct cand *c = malloc(m * sizeof(*c));
    if (!c)
        return -ENOMEM;
    m = 0;
    for (uint32_t r = 0; r < n; r++) {
        const struct diag_flag *f = &flags[(size_t)r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE];
        if (!coords[r].known || !waiting_candidate(f))
            continue;
        uint64_t key = ((uint64_t)coords[r].dp << 40) ^ ((uint64_t)coords[r].tp << 8) ^ f->index;
        c[m++] = (struct cand){key, coords[r].pp, r};
    }
    qsort(c, m, sizeof(*c), cmp_cand);
    for (size_t i = 0, j; i < m; i = j) {
        for (j = i + 1; j < m && c[j].key == c[i].key; j++)
            ;
        uint8_t p = (uint8_t)(c[i].key & 0xff);
        if (j - i > 1)
            cleared += settle(c + i, j - i, diag_dict_phase_backward(d, p), flags);
    }
    free(c);
    return cleared;
}
