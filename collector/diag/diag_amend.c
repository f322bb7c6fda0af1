/* Amending closed steps with late records: see diag_amend.h. */
#include "collector/diag/diag_amend.h"

#include <string.h>

#include "collector/diag/diag_pipeline.h"

int diag_amend_frame(const struct diag_amend *a, struct diag_frame *f, uint32_t age)
{
    struct diag_l2_result r2;
    struct diag_l3_result r3;
    uint32_t n = f->n_amend;
    int err;

    f->n_amend = 0;
    if (n == 0 || age >= a->persist->window)
        return 0;
    memset(a->flags, 0, (size_t)a->cap * DIAG_CAUSE_N * sizeof(*a->flags));
    diag_dict_classify(a->dict, a->name, a->name_ctx);
    a->l2->frozen = a->l3->frozen = true;
    err = diag_l2_run(a->l2, f, a->dict, a->groups, a->xgroups, a->flags, &r2);
    if (!err) {
        int cleared = diag_pipeline_resolve(a->coords, a->cap, a->dict, a->flags);
        err = cleared < 0 ? cleared : 0;
    }
    err = err ? err : diag_l3_run(a->l3, f, a->dict, a->groups, a->flags, &r3);
    a->l2->frozen = a->l3->frozen = false;
    if (err)
        return err;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = f->amend[i];
        for (int c = 0; c < DIAG_CAUSE_N && r < a->cap; c++)
            diag_persist_amend(a->persist, r, c, age, &a->flags[(size_t)r * DIAG_CAUSE_N + c]);
    }
    return (int)n;
}

int diag_amend_window(const struct diag_amend *a, struct diag_steps *win, uint64_t steps_closed,
                      uint64_t *beyond)
{
    int err = 0;

    for (uint32_t i = 0; !err && i < win->n; i++) {
        struct diag_frame *f = &win->frames[i];
        if (!f->used || !f->closed || !f->n_amend)
            continue;
        uint64_t age = steps_closed - 1 - f->close_seq;
        uint32_t n = f->n_amend;
        err = diag_amend_frame(a, f, age > UINT32_MAX ? UINT32_MAX : (uint32_t)age);
        if (err == 0)
            *beyond += n; /* closed too long ago for the window */
        err = err < 0 ? err : 0;
    }
    return err;
}
