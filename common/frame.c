#include "common/frame.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "proto/argus.pb-c.h"

int frame_encode(const void *raw, size_t raw_len, enum frame_codec codec, void **out,
                 size_t *out_len)
{
    Argus__V1__Frame frame = ARGUS__V1__FRAME__INIT;
    void *compressed = NULL;
    int r = 0;

    *out = NULL;
    *out_len = 0;
    if (raw_len > UINT32_MAX || raw_len > (size_t)LZ4_MAX_INPUT_SIZE ||
        (codec != FRAME_CODEC_NONE && codec != FRAME_CODEC_LZ4))
        return -EINVAL;
    frame.codec = ARGUS__V1__CODEC__CODEC_NONE;
    frame.raw_len = (uint32_t)raw_len;
    frame.payload.data = (uint8_t *)raw;
    frame.payload.len = raw_len;
    if (codec == FRAME_CODEC_LZ4 && raw_len > 0) {
        int bound = LZ4_compressBound((int)raw_len);
        compressed = malloc((size_t)bound);
        if (!compressed)
            return -ENOMEM;
        int n = LZ4_compress_default(raw, compressed, (int)raw_len, bound);
        if (n > 0 && (size_t)n < raw_len) {
            frame.codec = ARGUS__V1__CODEC__CODEC_LZ4;
            frame.payload.data = compressed;
            frame.payload.len = (size_t)n;
        }
    }
    size_t len = argus__v1__frame__get_packed_size(&frame);
    *out = malloc(len ? len : 1);
    if (!*out) {
        r = -ENOMEM;
        goto out;
    }
    *out_len = argus__v1__frame__pack(&frame, *out);
out:
    free(compressed);
    return r;
}

static int frame_decode_payload(const Argus__V1__Frame *frame, const struct frame_limits *limits,
                                void **raw, size_t *raw_len)
{
    size_t want = frame->raw_len;
    const ProtobufCBinaryData *p = &frame->payload;

    if (want > limits->max_raw)
        return FRAME_ERR_RAW_TOO_BIG;
    if (frame->codec == ARGUS__V1__CODEC__CODEC_NONE) {
        if (p->len != want)
            return FRAME_ERR_RAW_MISMATCH;
    } else if (frame->codec == ARGUS__V1__CODEC__CODEC_LZ4) {
        /* Check the claim against the most the payload could expand to,
         * before allocating for it. */
        if (want > (size_t)p->len * FRAME_LZ4_MAX_RATIO + 16)
            return FRAME_ERR_RAW_TOO_BIG;
        if (want == 0)
            return p->len == 0 ? 0 : FRAME_ERR_RAW_MISMATCH;
        if (p->len == 0)
            return FRAME_ERR_CORRUPT;
    } else {
        return FRAME_ERR_CODEC;
    }
    if (want == 0)
        return 0;
    char *buf = malloc(want);
    if (!buf)
        return -ENOMEM;
    if (frame->codec == ARGUS__V1__CODEC__CODEC_NONE) {
        memcpy(buf, p->data, want);
    } else {
        int n = LZ4_decompress_safe((const char *)p->data, buf, (int)p->len, (int)want);
        if (n < 0 || (size_t)n != want) {
            free(buf);
            return n < 0 ? FRAME_ERR_CORRUPT : FRAME_ERR_RAW_MISMATCH;
        }
    }
    *raw = buf;
    *raw_len = want;
    return 0;
}

int frame_decode(const void *data, size_t frame_len, const struct frame_limits *limits, void **raw,
                 size_t *raw_len, enum frame_codec *codec_used)
{
    static const struct frame_limits defaults = {FRAME_DEFAULT_MAX_FRAME, FRAME_DEFAULT_MAX_RAW};
    Argus__V1__Frame *frame;
    int r;

    *raw = NULL;
    *raw_len = 0;
    if (!limits)
        limits = &defaults;
    if (frame_len > limits->max_frame)
        return FRAME_ERR_OVERSIZE;
    frame = argus__v1__frame__unpack(NULL, frame_len, data);
    if (!frame)
        return FRAME_ERR_GARBAGE;
    r = frame_decode_payload(frame, limits, raw, raw_len);
    if (r == 0 && codec_used)
        *codec_used = (enum frame_codec)frame->codec;
    argus__v1__frame__free_unpacked(frame, NULL);
    return r;
}

const char *frame_strerror(int err)
{
    switch (err) {
    case 0:
        return "ok";
    case FRAME_ERR_OVERSIZE:
        return "frame is larger than the collector's frame size limit";
    case FRAME_ERR_GARBAGE:
        return "payload is not a valid argus.v1.Frame protobuf";
    case FRAME_ERR_CODEC:
        return "frame uses an unknown codec";
    case FRAME_ERR_RAW_TOO_BIG:
        return "frame raw_len is over the limit or larger than the payload could expand to";
    case FRAME_ERR_RAW_MISMATCH:
        return "frame raw_len does not match the decoded payload length";
    case FRAME_ERR_CORRUPT:
        return "LZ4 payload is corrupt or truncated";
    case -ENOMEM:
        return "out of memory";
    default:
        return "invalid frame";
    }
}
