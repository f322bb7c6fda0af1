/* libFuzzer target: frame_decode on arbitrary bytes must never crash, leak or
 * allocate more than its limits allow.
 *
 * With FUZZ_DUMP_DIR set, each frame that decodes also has its payload (a
 * packed Batch) written there: tests/fuzz/make_corpus.sh runs the frame
 * corpus through it once to make the Batch seeds of fuzz_batch and
 * fuzz_wire_steps from real frames. */
#include <stdio.h>
#include <stdlib.h>

#include "common/crc32c.h"
#include "common/frame.h"
#include "fuzz_util.h"

static void dump(const void *raw, size_t len)
{
    const char *dir = getenv("FUZZ_DUMP_DIR");
    char path[1024];
    FILE *f;

    if (!dir)
        return;
    snprintf(path, sizeof(path), "%s/batch-%08x", dir, crc32c(0, raw, len));
    if ((f = fopen(path, "we"))) {
        fwrite(raw, 1, len, f);
        fclose(f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct frame_limits limits = {.max_frame = 1 << 20, .max_raw = 8 << 20};
    void *raw;
    size_t raw_len;

    if (frame_decode(data, size, &limits, &raw, &raw_len, NULL) == 0) {
        dump(raw, raw_len);
        free(raw);
    }
    return 0;
}
