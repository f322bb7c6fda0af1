#include "tests/lib/ship.h"

#include <stdlib.h>

#include <lz4hc.h>
#include <zstd.h>

#include "common/frame.h"
#include "common/kernel_code.h"

bool ship_code_kernels = true;
bool ship_kernel_sets = true;

#define SHIP_SETS_MAX 64
static struct kernel_code_set ship_known[SHIP_SETS_MAX];
static size_t ship_nknown;

void ship_sets_forget(void)
{
    for (size_t i = 0; i < ship_nknown; i++)
        free((void *)ship_known[i].ids);
    ship_nknown = 0;
}

/* A learned set r may be coded against as the agent's batcher would (its
 * names and streams, at most half of its work ids moved), or NULL. */
static const struct kernel_code_set *ship_set_for(const Argus__V1__StepRecord *r)
{
    for (size_t k = 0; k < ship_nknown; k++) {
        const struct kernel_code_set *s = &ship_known[k];
        size_t moved = 0, i;

        if (s->n != r->n_kernels)
            continue;
        for (i = 0; i < r->n_kernels; i++) {
            const Argus__V1__KernelGroup *g = r->kernels[i];

            if (g->name_id != s->ids[i].name_id || g->stream != s->ids[i].stream)
                break;
            moved += g->work_id != s->ids[i].work_id;
        }
        if (i == r->n_kernels && moved * 2 <= r->n_kernels)
            return s;
    }
    return NULL;
}

void ship_sets_learn(Argus__V1__StepRecord *const *steps, size_t n)
{
    for (size_t i = 0; i < n && ship_nknown < SHIP_SETS_MAX; i++) {
        const Argus__V1__StepRecord *r = steps[i];
        struct kernel_code_ident *ids;

        if (!r->n_kernels || ship_set_for(r) || !(ids = malloc(r->n_kernels * sizeof(*ids))))
            continue;
        kernel_code_idents(r, ids);
        ship_known[ship_nknown++] =
            (struct kernel_code_set){kernel_code_record_set(r), ids, r->n_kernels};
    }
}

/* The packed Batch of steps[0..n) with dict (NULL: names already sent), the
 * kernels coded as the agent's batcher codes them (common/kernel_code.h;
 * as an identity set when the set was learned);
 * malloc'd, *len bytes. */
uint8_t *ship_batch_pack(Argus__V1__StepRecord **steps, size_t n, const struct dictionary *dict,
                         uint64_t seq, size_t *len)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    static struct kernel_code_buf code[BATCH_MAX];
    static struct kernel_code_prev last;
    Argus__V1__StepRecord coded[BATCH_MAX], *ptrs[BATCH_MAX];
    uint8_t *packed;

    if (n > BATCH_MAX)
        return NULL;
    kernel_code_prev_clear(&last);
    for (size_t i = 0; i < n && ship_code_kernels; i++) {
        kernel_code_compact_as(&code[i], steps[i], &last,
                               ship_kernel_sets ? ship_set_for(steps[i]) : NULL, &coded[i]);
        kernel_code_prev_set(&last, steps[i]);
        ptrs[i] = &coded[i];
    }
    if (ship_code_kernels)
        steps = ptrs;

    b.agent_id = SHIP_AGENT;
    b.epoch = 1733130000;
    b.seq = seq;
    b.created_unix_ns = 1733130000123456789ULL + seq * 1000000000ULL;
    b.n_steps = n;
    b.steps = steps;
    if (dict) {
        b.n_names = dict->n;
        b.names = dict->ptrs;
    }
    *len = argus__v1__batch__get_packed_size(&b);
    packed = malloc(*len ? *len : 1);
    if (packed)
        argus__v1__batch__pack(&b, packed);
    return packed;
}

/* Bytes of the Frame the agent sends: frame_encode(LZ4) of the Batch. */
size_t ship_bytes(Argus__V1__StepRecord **steps, size_t n, const struct dictionary *dict,
                  uint64_t seq)
{
    size_t len, frame_len = 0;
    uint8_t *packed = ship_batch_pack(steps, n, dict, seq, &len);
    void *frame = NULL;

    if (!packed || frame_encode(packed, len, FRAME_CODEC_LZ4, &frame, &frame_len) < 0)
        frame_len = 0;
    free(packed);
    free(frame);
    return frame_len;
}

/* For comparison only (not what frame.c does): the same Batch as one LZ4HC
 * block (level 12) and as zstd (level 3), plus a Frame's header bytes. */
void ship_other_codecs(Argus__V1__StepRecord **steps, size_t n, size_t *hc, size_t *zs)
{
    size_t len;
    uint8_t *packed = ship_batch_pack(steps, n, NULL, 3, &len);
    size_t cap = ZSTD_compressBound(len) + (size_t)LZ4_compressBound((int)len);
    char *out = malloc(cap);
    Argus__V1__Frame f = ARGUS__V1__FRAME__INIT;

    *hc = *zs = 0;
    if (packed && out) {
        f.codec = ARGUS__V1__CODEC__CODEC_LZ4;
        f.raw_len = (uint32_t)len;
        f.payload.data = (uint8_t *)out;
        f.payload.len = (size_t)LZ4_compress_HC((const char *)packed, out, (int)len, (int)cap,
                                                LZ4HC_CLEVEL_MAX);
        *hc = argus__v1__frame__get_packed_size(&f);
        f.payload.len = ZSTD_compress(out, cap, packed, len, 3);
        if (!ZSTD_isError(f.payload.len))
            *zs = argus__v1__frame__get_packed_size(&f);
    }
    free(packed);
    free(out);
}
