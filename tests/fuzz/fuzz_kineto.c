/* libFuzzer target: the Kineto (PyTorch profiler) trace reader
 * (agent/sources/kineto.c) on arbitrary JSON text: a trace loads within the
 * default limits or is refused with a sentence; what loads is consistent
 * (steps ordered, names and ids in step). */
#include <stdlib.h>

#include "agent/sources/kineto.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kineto_trace *t = NULL;
    char err[256] = "";

    if (kineto_parse((const char *)data, size, NULL, &t, err, sizeof(err)) < 0) {
        if (t || !err[0])
            abort();
        return 0;
    }
    for (size_t i = 1; i < t->n_steps; i++)
        if (t->steps[i].ts_ns < t->steps[i - 1].ts_ns)
            abort();
    for (size_t i = 0; i < t->n_names; i++)
        if (!t->names[i])
            abort();
    kineto_free(t);
    return 0;
}
