/* The Frame codec: a packed argus.v1.Batch wrapped in an argus.v1.Frame,
 * optionally as one LZ4 block.
 *
 * Decoding treats its input as hostile. Every limit is checked before the
 * buffer for the decoded bytes is allocated: the packed frame size, the codec,
 * the declared raw_len against the limit and against what the payload could
 * possibly expand to, and finally that the payload decodes to exactly raw_len
 * bytes (LZ4_decompress_safe only). Each failure has its own error code, and
 * frame_strerror says what was wrong in words a peer can act on.
 */
#ifndef ARGUS_COMMON_FRAME_H
#define ARGUS_COMMON_FRAME_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

enum frame_codec {
    FRAME_CODEC_NONE = 0, /* = ARGUS__V1__CODEC__CODEC_NONE */
    FRAME_CODEC_LZ4 = 1,  /* = ARGUS__V1__CODEC__CODEC_LZ4 */
};

#define FRAME_DEFAULT_MAX_FRAME (4u << 20) /* packed Frame bytes */
#define FRAME_DEFAULT_MAX_RAW (32u << 20)  /* decoded Batch bytes */
#define FRAME_LZ4_MAX_RATIO 255u           /* LZ4 cannot expand more than ~255x */

struct frame_limits {
    size_t max_frame; /* largest packed Frame accepted */
    size_t max_raw;   /* largest decoded payload accepted */
};

/* Error codes of frame_decode, each distinct. */
#define FRAME_ERR_OVERSIZE (-EMSGSIZE)     /* packed frame over max_frame */
#define FRAME_ERR_GARBAGE (-EBADMSG)       /* not a Frame protobuf */
#define FRAME_ERR_CODEC (-EPROTONOSUPPORT) /* unknown codec */
#define FRAME_ERR_RAW_TOO_BIG (-E2BIG)     /* raw_len over max_raw or impossible ratio */
#define FRAME_ERR_RAW_MISMATCH (-ERANGE)   /* payload decodes to another length */
#define FRAME_ERR_CORRUPT (-EILSEQ)        /* LZ4 block corrupt or truncated */

/* Wrap raw (raw_len bytes) in a packed Frame with codec. On success returns 0
 * and *out (malloc'd, caller frees) of *out_len bytes. LZ4 falls back to NONE
 * when compression does not shrink the data. Returns -EINVAL for an unknown
 * codec or raw_len over UINT32_MAX, -ENOMEM. */
int frame_encode(const void *raw, size_t raw_len, enum frame_codec codec, void **out,
                 size_t *out_len);

/* Decode a packed Frame. On success returns 0 and *raw (malloc'd, caller
 * frees; NULL when *raw_len is 0) of *raw_len bytes, and *codec_used when not
 * NULL. On failure returns one of FRAME_ERR_* (or -ENOMEM) and leaves *raw
 * NULL. limits NULL means the defaults. */
int frame_decode(const void *frame, size_t frame_len, const struct frame_limits *limits, void **raw,
                 size_t *raw_len, enum frame_codec *codec_used);

/* A sentence for a frame_decode error, for logs and gRPC status messages. */
const char *frame_strerror(int err);

#endif
