/* One traceEvents entry of a Kineto trace, read from the pull tokenizer
 * (kineto_json.h) into a small struct: only the members the reader
 * (kineto.c) looks at are kept, every other member is skipped unread. */
#ifndef ARGUS_AGENT_KINETO_EVENT_H
#define ARGUS_AGENT_KINETO_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/sources/kineto_json.h"

/* One traceEvents entry, the fields the reader looks at. */
struct kineto_event {
    char ph[4], cat[32];
    char *name; /* caller's buffer of max_string + 1 bytes: head of the name (max_name_len + 1
                   bytes), NUL-terminated */
    size_t name_len;
    bool has_name, has_ph, has_cat, has_ts, has_dur, ts_ok, dur_ok, has_args;
    uint64_t ts_ns, dur_ns;
    int64_t stream, device, correlation;
    uint32_t grid[3], block[3]; /* args.grid, args.block: the launch shape of a kernel */
    bool has_grid, has_block;
};

/* Read the next value of j (one traceEvents entry) into ev (ev->name is
 * kept: the caller's buffer). A value that is not an object is skipped and
 * leaves ev->has_ph false. Returns 0 or j's error. */
int kineto_event_read(struct kjson *j, struct kineto_event *ev);

/* Read an integer-valued member: *v (and *set when not NULL) when the value
 * is a number (a fraction is cut), else the value is skipped. */
int kineto_event_read_int(struct kjson *j, int64_t *v, bool *set);

#endif
