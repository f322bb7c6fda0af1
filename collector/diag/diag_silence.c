/* Silence by wall clock: see diag_silence.h. */
#include "collector/diag/diag_silence.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "collector/diag/diag_report.h"

/* Quiet for silence_ns while the job went on for that long after it. */
static bool quiet(const struct diag_watermark *w, uint64_t last_ns, uint64_t silence_ns,
                  uint64_t now_ns)
{
    return last_ns && last_ns + silence_ns <= w->last_ns && last_ns + silence_ns <= now_ns;
}

struct stream_of {
    const struct diag_watermark *w;
    uint32_t stream;
};

static bool of_stream(const void *ctx, uint32_t r)
{
    const struct stream_of *c = ctx;

    return c->w->rank[r].stream == c->stream && c->w->rank[r].last_recv_ns;
}

uint32_t diag_silence_ranks(const struct diag_watermark *w, const struct diag_slots *slots,
                            uint32_t stream, char *buf, size_t len)
{
    struct stream_of c = {w, stream};

    return diag_slots_ranks_text(slots, w->cap, of_stream, &c, buf, len);
}

static int node_suspect(struct diag_watermark *w, uint32_t s, uint64_t now_ns, uint32_t window,
                        const struct diag_silence_env *env, Argus__V1__Report *rep)
{
    struct diag_wm_stream *st = &w->streams[s];
    struct diag_silence_where at = {"", -1, ""};
    char ranks[160], ev[320];
    uint32_t first = UINT32_MAX;

    for (uint32_t r = 0; r < w->cap && first == UINT32_MAX; r++)
        if (w->rank[r].stream == s && w->rank[r].last_recv_ns)
            first = r;
    if (first != UINT32_MAX)
        env->where(env->where_ctx, first, &at);
    const char *node = at.node && *at.node ? at.node : st->id;
    uint32_t n = diag_silence_ranks(w, env->slots, s, ranks, sizeof(ranks));
    double quiet_s = (double)(now_ns - st->last_recv_ns) / 1e9;
    snprintf(ev, sizeof(ev),
             "node %s (agent %s): nothing received for %.0f s while the job went on; "
             "its %u ranks %s",
             node, st->id, quiet_s, n, ranks);
    Argus__V1__Suspect *sus =
        diag_suspect_new(DIAG_RANK_NONE, node, -1, "node", ARGUS__V1__LEVEL__LEVEL_SILENT,
                         ARGUS__V1__CAUSE__CAUSE_SILENT, "node", quiet_s, n, window, ev);
    return sus ? diag_report_add(rep, sus) : -ENOMEM;
}

static int rank_suspect(struct diag_watermark *w, uint32_t r, uint64_t now_ns, uint32_t window,
                        diag_silence_where_fn where, void *ctx, Argus__V1__Report *rep)
{
    struct diag_silence_where at = {"", -1, ""};
    const struct diag_wm_rank *wr = &w->rank[r];
    char ev[200];

    where(ctx, r, &at);
    double quiet_s = (double)(now_ns - wr->last_recv_ns) / 1e9;
    snprintf(ev, sizeof(ev),
             "no step record for %.0f s (last step %" PRIu64 ") while its agent and the job "
             "went on",
             quiet_s, wr->next ? wr->next - 1 : 0);
    Argus__V1__Suspect *s =
        diag_suspect_new(r, at.node, at.gpu, at.group, ARGUS__V1__LEVEL__LEVEL_SILENT,
                         ARGUS__V1__CAUSE__CAUSE_SILENT, "step records", quiet_s, 0, window, ev);
    return s ? diag_report_add(rep, s) : -ENOMEM;
}

/* The later of last_ns and when stream s's link came up: the time a link
 * was down is not silence. */
static uint64_t since_up(const struct diag_watermark *w, uint32_t s, uint64_t last_ns)
{
    uint64_t up = s < w->n_streams ? w->streams[s].up_ns : 0;

    return last_ns && up > last_ns ? up : last_ns;
}

/* Ask env->link about every stream: down, or up since when. Returns the
 * streams down. */
static uint32_t links_now(struct diag_watermark *w, const struct diag_silence_env *env)
{
    uint32_t down = 0;

    for (uint32_t s = 0; s < w->n_streams; s++) {
        struct diag_wm_stream *st = &w->streams[s];
        st->up_ns = 0;
        st->down = env->link && !env->link(env->link_ctx, st->id, &st->up_ns);
        down += st->down;
    }
    return down;
}

int diag_silence_check(struct diag_watermark *w, uint64_t silence_ns, uint64_t now_ns,
                       uint32_t window, const struct diag_silence_env *env, Argus__V1__Report *rep,
                       struct diag_silence_counts *out)
{
    int err = 0;

    memset(out, 0, sizeof(*out));
    out->down = links_now(w, env);
    for (uint32_t s = 0; s < w->n_streams && !err; s++) {
        struct diag_wm_stream *st = &w->streams[s];
        if (st->silent || st->down ||
            !quiet(w, since_up(w, s, st->last_recv_ns), silence_ns, now_ns))
            continue;
        st->silent = true;
        for (uint32_t r = 0; r < w->cap; r++)
            if (w->rank[r].stream == s && w->rank[r].last_recv_ns)
                w->rank[r].silent = true;
        err = node_suspect(w, s, now_ns, window, env, rep);
        out->nodes += !err;
    }
    for (uint32_t r = 0; r < w->cap && !err; r++) {
        struct diag_wm_rank *wr = &w->rank[r];
        if (wr->silent || (wr->stream < w->n_streams && w->streams[wr->stream].down) ||
            !quiet(w, since_up(w, wr->stream, wr->last_recv_ns), silence_ns, now_ns))
            continue;
        wr->silent = true;
        err = rank_suspect(w, r, now_ns, window, env->where, env->where_ctx, rep);
        out->ranks += !err;
    }
    return err;
}
