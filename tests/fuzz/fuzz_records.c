/* libFuzzer target: the recorded-step-records loader (agent/sources/records.c,
 * the agent's replay.records source) on an arbitrary file: it is refused at
 * create with the offset of the bad entry, or it starts, announces its names
 * and ranks and replays its first steps to a sink, without crashing or
 * leaking. */
#include <stdlib.h>

#include "agent/sources/records.h"
#include "fuzz_util.h"

static void on_event(void *ctx, const struct agent_event *ev)
{
    (*(size_t *)ctx)++;
}

static void on_name(void *ctx, uint64_t id, const char *name)
{
    if (!name)
        abort();
    (*(size_t *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct records_config c = {.rate = 1e6};
    size_t seen = 0;
    struct event_sink sink = {.event = on_event, .name = on_name, .ctx = &seen};
    char path[512], why[512] = "";
    void *st;

    fuzz_write("fuzz.records", data, size, path, sizeof(path));
    c.path = path;
    st = source_records_ops.create(&c, why, sizeof(why));
    if (!st) {
        if (!why[0])
            abort();
        return 0;
    }
    if (source_records_ops.start(st, &sink, why, sizeof(why)) == 0)
        (void)source_records_ops.dispatch(st);
    source_records_ops.destroy(st);
    return 0;
}
