/* libFuzzer target: the hand-written Batch.steps walker (common/wire_steps.c)
 * on arbitrary bytes, without protobuf-c in front of it: every entry it
 * returns must lie inside the input, the walk must end (0 or -EBADMSG), and
 * a walk must make progress at every step. */
#include <stdlib.h>

#include "common/wire_steps.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wire_steps_reader r;
    const uint8_t *rec, *prev = NULL;
    size_t len;
    int rc;

    wire_steps_reader_init(&r, data, size);
    while ((rc = wire_steps_next(&r, &rec, &len)) == 1) {
        if (rec < data || len > size || rec + len > data + size || (prev && rec <= prev))
            abort();
        prev = rec;
    }
    if (rc != 0 && rc != -74 /* -EBADMSG */)
        abort();
    return 0;
}
