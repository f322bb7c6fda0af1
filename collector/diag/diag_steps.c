/* The window of open steps: see diag_steps.h. */
#include "collector/diag/diag_steps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int diag_steps_init(struct diag_steps *w, uint32_t n)
{
    memset(w, 0, sizeof(*w));
    w->n = n < 2 ? 2 : n > 64 ? 64 : n;
    w->frames = calloc(w->n, sizeof(*w->frames));
    return w->frames ? 0 : -ENOMEM;
}

void diag_steps_free(struct diag_steps *w)
{
    for (uint32_t i = 0; w->frames && i < w->n; i++)
        diag_frame_free(&w->frames[i]);
    free(w->frames);
    w->frames = NULL;
}

int diag_steps_reserve(struct diag_steps *w, uint32_t ranks)
{
    for (uint32_t i = 0; i < w->n; i++)
        if (diag_frame_reserve(&w->frames[i], ranks))
            return -ENOMEM;
    return 0;
}

int diag_steps_slot(struct diag_steps *w, uint64_t step, uint64_t now_ns, struct diag_frame **f)
{
    if (!w->started) {
        w->started = true;
        w->next = step;
    }
    if (step < w->next)
        return 1;
    if (step - w->next >= w->n)
        return 2;
    *f = &w->frames[step % w->n];
    if (!(*f)->used || (*f)->step != step)
        diag_frame_reset(*f, step, now_ns);
    return 0;
}

static bool later_open(const struct diag_steps *w)
{
    for (uint32_t i = 0; i < w->n; i++)
        if (w->frames[i].used && w->frames[i].step > w->next)
            return true;
    return false;
}

struct diag_frame *diag_steps_ready(struct diag_steps *w, uint64_t now_ns, uint32_t expect,
                                    uint64_t timeout_ns, uint64_t force_upto, bool *complete)
{
    while (w->started) {
        struct diag_frame *f = &w->frames[w->next % w->n];
        if (!f->used || f->step != w->next) {
            if (!later_open(w)) {
                /* Nothing open at all: a forced jump moves the window. */
                if (force_upto != DIAG_STEPS_NO_FORCE && force_upto != UINT64_MAX &&
                    w->next < force_upto)
                    w->next = force_upto;
                return NULL;
            }
            w->next++; /* nobody reported this step */
            continue;
        }
        *complete = expect > 0 && f->reported >= expect;
        bool timeout = now_ns >= f->first_ns + timeout_ns;
        bool forced = f->step < force_upto;
        return *complete || timeout || forced ? f : NULL;
    }
    return NULL;
}

void diag_steps_closed(struct diag_steps *w, struct diag_frame *f)
{
    f->used = false;
    w->next = f->step + 1;
}
