/* Benchmark of the common codecs: frame encode/decode (LZ4) and CRC32C on a
 * step-record-like payload. Prints one line per measurement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/frame.h"

#define PAYLOAD (256 * 1024)

static void fill(unsigned char *p, size_t n)
{
    /* repetitive structure with noise, like packed step records */
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245 + 12345;
        p[i] = (i % 64 < 40) ? (unsigned char)(i % 64) : (unsigned char)(x >> 24);
    }
}

int main(void)
{
    unsigned char *raw = malloc(PAYLOAD);
    void *frame = NULL, *out = NULL;
    size_t flen = 0, olen;
    const int iters = 400;
    uint64_t t0, t1;
    volatile uint32_t sink = 0;

    fill(raw, PAYLOAD);
    t0 = clock_mono_ns();
    for (int i = 0; i < iters; i++) {
        free(frame);
        frame_encode(raw, PAYLOAD, FRAME_CODEC_LZ4, &frame, &flen);
    }
    t1 = clock_mono_ns();
    printf("frame_encode lz4: %.0f MB/s, ratio %.2f\n",
           (double)PAYLOAD * iters / ((double)(t1 - t0) / 1e9) / 1e6, (double)PAYLOAD / flen);
    t0 = clock_mono_ns();
    for (int i = 0; i < iters; i++) {
        frame_decode(frame, flen, NULL, &out, &olen, NULL);
        free(out);
    }
    t1 = clock_mono_ns();
    printf("frame_decode lz4: %.0f MB/s\n",
           (double)PAYLOAD * iters / ((double)(t1 - t0) / 1e9) / 1e6);
    t0 = clock_mono_ns();
    for (int i = 0; i < iters * 4; i++)
        sink += crc32c(0, raw, PAYLOAD);
    t1 = clock_mono_ns();
    printf("crc32c: %.0f MB/s\n", (double)PAYLOAD * iters * 4 / ((double)(t1 - t0) / 1e9) / 1e6);
    t0 = clock_mono_ns();
    for (int i = 0; i < iters; i++)
        sink += crc32c_sw(0, raw, PAYLOAD);
    t1 = clock_mono_ns();
    printf("crc32c_sw: %.0f MB/s\n", (double)PAYLOAD * iters / ((double)(t1 - t0) / 1e9) / 1e6);
    free(frame);
    free(raw);
    return sink == 42;
}
