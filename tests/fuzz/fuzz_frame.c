/* libFuzzer target: frame_decode on arbitrary bytes must never crash, leak or
 * allocate more than its limits allow. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct frame_limits limits = {.max_frame = 1 << 20, .max_raw = 8 << 20};
    void *raw;
    size_t raw_len;

    if (frame_decode(data, size, &limits, &raw, &raw_len, NULL) == 0)
        free(raw);
    return 0;
}
