/* Per-stream progress and the job's watermark: see diag_watermark.h. */
#include "collector/diag/diag_watermark.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

void diag_watermark_init(struct diag_watermark *w, uint64_t hold_ns)
{
    memset(w, 0, sizeof(*w));
    w->hold_ns = hold_ns ? hold_ns : 10000000000ULL;
    w->live = UINT32_MAX;
}

void diag_watermark_free(struct diag_watermark *w)
{
    for (uint32_t i = 0; i < w->n_streams; i++)
        free(w->streams[i].id);
    free(w->streams);
    free(w->rank);
    diag_watermark_init(w, w->hold_ns);
}

int diag_watermark_reserve(struct diag_watermark *w, uint32_t cap)
{
    if (cap <= w->cap)
        return 0;
    if (array_grow_zeroed((void **)&w->rank, w->cap, cap, sizeof(*w->rank)))
        return -ENOMEM;
    for (uint32_t i = w->cap; i < cap; i++)
        w->rank[i].stream = DIAG_WM_NO_STREAM;
    w->cap = cap;
    return 0;
}

int diag_watermark_stream(struct diag_watermark *w, const char *id)
{
    for (uint32_t i = 0; i < w->n_streams; i++)
        if (strcmp(w->streams[i].id, id) == 0)
            return (int)i;
    if (w->n_streams == w->cap_streams) {
        uint32_t cap = w->cap_streams ? w->cap_streams * 2 : 8;
        if (array_grow_zeroed((void **)&w->streams, w->cap_streams, cap, sizeof(*w->streams)))
            return -ENOMEM;
        w->cap_streams = cap;
    }
    char *copy = strdup(id);
    if (!copy)
        return -ENOMEM;
    w->streams[w->n_streams] = (struct diag_wm_stream){.id = copy};
    return (int)w->n_streams++;
}

bool diag_watermark_record(struct diag_watermark *w, uint32_t stream, uint32_t rank, uint64_t step,
                           uint64_t recv_ns)
{
    struct diag_wm_rank *r = &w->rank[rank];
    bool first = r->last_recv_ns == 0;

    w->seen += first;

    if (!w->first_ns)
        w->first_ns = recv_ns;
    if (recv_ns > w->last_ns)
        w->last_ns = recv_ns;
    if (step > w->newest_step)
        w->newest_step = step;
    r->last_recv_ns = recv_ns ? recv_ns : 1;
    r->silent = false;
    if (step + 1 > r->next) {
        r->next = step + 1;
        r->progress_ns = recv_ns;
    }
    if (stream < w->n_streams) {
        r->stream = stream;
        if (recv_ns > w->streams[stream].last_recv_ns)
            w->streams[stream].last_recv_ns = recv_ns;
        w->streams[stream].silent = false;
    }
    return first;
}

void diag_watermark_update(struct diag_watermark *w, uint64_t now_ns)
{
    bool grace = w->first_ns && now_ns < w->first_ns + w->hold_ns;
    uint64_t mark = UINT64_MAX, delivered = 0;
    uint32_t live = 0;

    for (uint32_t i = 0; i < w->cap; i++) {
        const struct diag_wm_rank *r = &w->rank[i];
        if (!r->last_recv_ns) {
            if (grace && i < w->world) { /* not started yet: wait for it */
                live++;
                mark = 0;
            }
            continue;
        }
        if (r->next > delivered)
            delivered = r->next;
        if (now_ns <= r->progress_ns + w->hold_ns) {
            live++;
            if (r->next < mark)
                mark = r->next;
        }
    }
    if (grace && !w->world) { /* ranks may still join: nothing is complete */
        live = UINT32_MAX;
        mark = 0;
    }
    w->live = live;
    w->mark = mark == UINT64_MAX ? delivered : mark;
}

double diag_watermark_lag_s(const struct diag_watermark *w, uint64_t oldest_first_ns,
                            uint64_t now_ns)
{
    if (!oldest_first_ns || now_ns <= oldest_first_ns)
        return 0;
    return (double)(now_ns - oldest_first_ns) / 1e9;
}
