/* The frame codec: round trips, and every kind of bad frame rejected with its
 * own error before anything large is allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4.h>

#include "common/frame.h"
#include "proto/argus.pb-c.h"

/* A compressible payload of n bytes. */
static uint8_t *make_payload(size_t n)
{
    uint8_t *p = calloc(1, n + 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i / 16) % 7 + (i % 3));
    return p;
}

/* Pack a Frame by hand, with any codec, raw_len and payload. */
static uint8_t *pack_frame(int codec, uint32_t raw_len, const void *payload, size_t len,
                           size_t *out_len)
{
    Argus__V1__Frame f = ARGUS__V1__FRAME__INIT;
    f.codec = codec;
    f.raw_len = raw_len;
    f.payload.data = (uint8_t *)payload;
    f.payload.len = len;
    *out_len = argus__v1__frame__get_packed_size(&f);
    uint8_t *buf = malloc(*out_len);
    argus__v1__frame__pack(&f, buf);
    return buf;
}

static void roundtrip(enum frame_codec codec, size_t n, enum frame_codec expect_used)
{
    uint8_t *raw = make_payload(n), *out = NULL;
    void *frame, *decoded;
    size_t frame_len, decoded_len;
    enum frame_codec used;

    assert_int_equal(frame_encode(raw, n, codec, &frame, &frame_len), 0);
    assert_int_equal(frame_decode(frame, frame_len, NULL, &decoded, &decoded_len, &used), 0);
    assert_int_equal(decoded_len, n);
    assert_int_equal(used, expect_used);
    if (n)
        assert_memory_equal(decoded, raw, n);
    if (codec == FRAME_CODEC_LZ4 && n > 1000)
        assert_true(frame_len < n / 2);
    free(out);
    free(raw);
    free(frame);
    free(decoded);
}

static void test_roundtrip(void **state)
{
    roundtrip(FRAME_CODEC_NONE, 1000, FRAME_CODEC_NONE);
    roundtrip(FRAME_CODEC_LZ4, 100000, FRAME_CODEC_LZ4);
    roundtrip(FRAME_CODEC_LZ4, 0, FRAME_CODEC_NONE);
    roundtrip(FRAME_CODEC_NONE, 0, FRAME_CODEC_NONE);
}

static void test_incompressible_falls_back_to_none(void **state)
{
    uint8_t raw[64];
    void *frame, *decoded;
    size_t frame_len, n;
    enum frame_codec used;

    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (uint8_t)(i * 151 + 17);
    assert_int_equal(frame_encode(raw, sizeof(raw), FRAME_CODEC_LZ4, &frame, &frame_len), 0);
    assert_int_equal(frame_decode(frame, frame_len, NULL, &decoded, &n, &used), 0);
    assert_int_equal(used, FRAME_CODEC_NONE);
    assert_memory_equal(decoded, raw, sizeof(raw));
    free(frame);
    free(decoded);
}

static void test_oversize_frame(void **state)
{
    struct frame_limits lim = {.max_frame = 1024, .max_raw = 1 << 20};
    uint8_t *raw = make_payload(4096);
    void *frame, *decoded = (void *)1;
    size_t frame_len, n;

    assert_int_equal(frame_encode(raw, 4096, FRAME_CODEC_NONE, &frame, &frame_len), 0);
    assert_int_equal(frame_decode(frame, frame_len, &lim, &decoded, &n, NULL), FRAME_ERR_OVERSIZE);
    assert_null(decoded);
    free(frame);
    free(raw);
}

static void test_lying_raw_len(void **state)
{
    uint8_t *raw = make_payload(10000);
    char comp[LZ4_COMPRESSBOUND(10000)];
    int clen = LZ4_compress_default((char *)raw, comp, 10000, sizeof(comp));
    size_t flen, n;
    void *decoded;

    /* Plausible but wrong: larger than the real length. */
    uint8_t *f = pack_frame(1, 10100, comp, (size_t)clen, &flen);
    assert_int_equal(frame_decode(f, flen, NULL, &decoded, &n, NULL), FRAME_ERR_RAW_MISMATCH);
    free(f);
    /* Impossible: more than the payload could expand to (a decompression bomb
     * claim), refused before allocating. */
    f = pack_frame(1, (uint32_t)clen * 300, comp, (size_t)clen, &flen);
    assert_int_equal(frame_decode(f, flen, NULL, &decoded, &n, NULL), FRAME_ERR_RAW_TOO_BIG);
    free(f);
    /* Over the configured raw limit. */
    f = pack_frame(1, 4000000000u, comp, (size_t)clen, &flen);
    assert_int_equal(frame_decode(f, flen, NULL, &decoded, &n, NULL), FRAME_ERR_RAW_TOO_BIG);
    free(f);
    /* Uncompressed frame whose raw_len disagrees with its payload. */
    f = pack_frame(0, 99, raw, 100, &flen);
    assert_int_equal(frame_decode(f, flen, NULL, &decoded, &n, NULL), FRAME_ERR_RAW_MISMATCH);
    free(f);
    free(raw);
}

static void test_truncated_payload(void **state)
{
    uint8_t *raw = make_payload(10000);
    char comp[LZ4_COMPRESSBOUND(10000)];
    int clen = LZ4_compress_default((char *)raw, comp, 10000, sizeof(comp));
    size_t flen, n;
    void *decoded;

    uint8_t *f = pack_frame(1, 10000, comp, (size_t)clen / 2, &flen);
    assert_int_equal(frame_decode(f, flen, NULL, &decoded, &n, NULL), FRAME_ERR_CORRUPT);
    assert_null(decoded);
    free(f);
    free(raw);
}

static void test_garbage_and_truncated_frame(void **state)
{
    uint8_t garbage[256];
    void *frame, *decoded;
    size_t frame_len, n;
    uint8_t *raw = make_payload(1000);

    for (size_t i = 0; i < sizeof(garbage); i++)
        garbage[i] = (uint8_t)(0xff - i);
    assert_int_equal(frame_decode(garbage, sizeof(garbage), NULL, &decoded, &n, NULL),
                     FRAME_ERR_GARBAGE);
    /* A valid frame cut short is not a Frame either. */
    assert_int_equal(frame_encode(raw, 1000, FRAME_CODEC_NONE, &frame, &frame_len), 0);
    assert_int_equal(frame_decode(frame, frame_len - 10, NULL, &decoded, &n, NULL),
                     FRAME_ERR_GARBAGE);
    free(frame);
    free(raw);
}

static void test_unknown_codec(void **state)
{
    size_t flen, n;
    void *decoded;
    uint8_t *f = pack_frame(7, 3, "abc", 3, &flen);

    assert_int_equal(frame_decode(f, flen, NULL, &decoded, &n, NULL), FRAME_ERR_CODEC);
    free(f);
}

static void test_errors_are_distinct_and_described(void **state)
{
    const int errs[] = {FRAME_ERR_OVERSIZE,    FRAME_ERR_GARBAGE,      FRAME_ERR_CODEC,
                        FRAME_ERR_RAW_TOO_BIG, FRAME_ERR_RAW_MISMATCH, FRAME_ERR_CORRUPT};
    const size_t n = sizeof(errs) / sizeof(errs[0]);

    for (size_t i = 0; i < n; i++) {
        assert_true(errs[i] < 0);
        for (size_t j = i + 1; j < n; j++) {
            assert_int_not_equal(errs[i], errs[j]);
            assert_string_not_equal(frame_strerror(errs[i]), frame_strerror(errs[j]));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_incompressible_falls_back_to_none),
        cmocka_unit_test(test_oversize_frame),
        cmocka_unit_test(test_lying_raw_len),
        cmocka_unit_test(test_truncated_payload),
        cmocka_unit_test(test_garbage_and_truncated_frame),
        cmocka_unit_test(test_unknown_codec),
        cmocka_unit_test(test_errors_are_distinct_and_described),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
