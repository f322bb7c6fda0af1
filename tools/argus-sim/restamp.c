#include "tools/argus-sim/restamp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"

static uint64_t restamp_shift(uint64_t t, int64_t offset_ns)
{
    return t ? (uint64_t)((int64_t)t + offset_ns) : 0;
}

void restamp_record(Argus__V1__StepRecord *r, int64_t offset_ns)
{
    r->start_unix_ns = restamp_shift(r->start_unix_ns, offset_ns);
    for (size_t i = 0; i < r->n_collectives; i++) {
        Argus__V1__Collective *c = r->collectives[i];
        c->host_arrival_unix_ns = restamp_shift(c->host_arrival_unix_ns, offset_ns);
        c->gpu_start_unix_ns = restamp_shift(c->gpu_start_unix_ns, offset_ns);
        c->gpu_end_unix_ns = restamp_shift(c->gpu_end_unix_ns, offset_ns);
    }
}

/* Append field (varint wire type) = v; returns the bytes written (<= 11). */
static size_t restamp_varint_field(uint8_t *p, unsigned field, uint64_t v)
{
    size_t n = 0;

    p[n++] = (uint8_t)(field << 3); /* wire type 0 */
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

int restamp_frame(const void *in, size_t len, uint64_t epoch, uint64_t seq,
                  uint64_t created_unix_ns, void **out, size_t *out_len)
{
    void *raw = NULL;
    size_t raw_len = 0;
    int r = frame_decode(in, len, NULL, &raw, &raw_len, NULL);

    *out = NULL;
    if (r < 0)
        return r;
    uint8_t *buf = malloc(raw_len + 3 * 11);
    if (!buf) {
        free(raw);
        return -ENOMEM;
    }
    if (raw_len)
        memcpy(buf, raw, raw_len);
    size_t n = raw_len;
    n += restamp_varint_field(buf + n, 2, epoch);
    n += restamp_varint_field(buf + n, 3, seq);
    n += restamp_varint_field(buf + n, 8, created_unix_ns);
    r = frame_encode(buf, n, FRAME_CODEC_LZ4, out, out_len);
    free(buf);
    free(raw);
    return r;
}
