/* libFuzzer target: the collector's view of one decoded frame payload — the
 * Batch unpack (protobuf-c), the expansion of coded kernels
 * (kernel_code_expand_batch), ingest_validate against the default limits, and
 * every Batch.steps entry found by the hand-written walker unpacked as a
 * StepRecord — must never crash, leak or read out of bounds, and the walker
 * must agree with protobuf-c on how many steps a valid batch holds. */
#include <stdlib.h>

#include "collector/ingest/ingest.h"
#include "collector/ingest/validate.h"
#include "common/kernel_code.h"
#include "common/wire_steps.h"
#include "fuzz_util.h"
#include "proto/argus.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ingest_limits limits;
    static int ready;
    struct wire_steps_reader r;
    const uint8_t *rec;
    size_t len, walked = 0;
    char err[256];
    Argus__V1__Batch *b;
    int rc;

    if (!ready) {
        ingest_default_limits(&limits);
        ready = 1;
    }
    b = argus__v1__batch__unpack(NULL, size, data);
    if (!b)
        return 0;
    if (kernel_code_expand_batch(b, limits.max_groups_per_step, limits.max_clusters_per_group,
                                 NULL) >= 0)
        (void)ingest_validate(b, &limits, err, sizeof(err));
    wire_steps_reader_init(&r, data, size);
    while ((rc = wire_steps_next(&r, &rec, &len)) > 0) {
        Argus__V1__StepRecord *s = argus__v1__step_record__unpack(NULL, len, rec);
        if (!s)
            abort(); /* protobuf-c unpacked the batch, so each step must unpack */
        argus__v1__step_record__free_unpacked(s, NULL);
        walked++;
    }
    if (rc == 0 && walked != b->n_steps)
        abort();
    argus__v1__batch__free_unpacked(b, NULL);
    return 0;
}
