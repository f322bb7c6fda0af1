/* The shared body of the probes that only sum counters in the kernel (io,
 * net): open, load and attach one skeleton, keep its pid filter map in step
 * with the tracked ranks, and turn the growth of its counter map into
 * AGENT_EVENT_COUNTER deltas every tick. A probe supplies what differs as a
 * probe_counter_desc (the skeleton through PROBE_COUNTER_SKELETON, the map
 * names, the counter) and two thin source_ops entries of its own. */
#ifndef ARGUS_AGENT_PROBE_COUNTER_H
#define ARGUS_AGENT_PROBE_COUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/sources/source.h"

struct bpf_object;

struct probe_counter_desc {
    const char *name;               /* "io" */
    const char *const *tracepoints; /* tp_btf names supported() needs, NULL-terminated */
    uint32_t counter;               /* enum agent_counter */
    const char *tracked_map;        /* pid filter map */
    const char *counter_map;        /* per-pid (0 = node) counter map */
    void *(*open)(void);            /* the skeleton's generated functions */
    int (*load)(void *skel);
    int (*attach)(void *skel);
    void (*destroy)(void *skel);
    struct bpf_object *(*object)(void *skel);
};

/* Typed wrappers around a bpftool skeleton `prefix_bpf`, for the desc. */
#define PROBE_COUNTER_SKELETON(prefix)                                                             \
    static void *prefix##_skel_open(void)                                                          \
    {                                                                                              \
        return prefix##_bpf__open();                                                               \
    }                                                                                              \
    static int prefix##_skel_load(void *s)                                                         \
    {                                                                                              \
        return prefix##_bpf__load(s);                                                              \
    }                                                                                              \
    static int prefix##_skel_attach(void *s)                                                       \
    {                                                                                              \
        return prefix##_bpf__attach(s);                                                            \
    }                                                                                              \
    static void prefix##_skel_destroy(void *s)                                                     \
    {                                                                                              \
        prefix##_bpf__destroy(s);                                                                  \
    }                                                                                              \
    static struct bpf_object *prefix##_skel_object(void *s)                                        \
    {                                                                                              \
        return ((struct prefix##_bpf *)s)->obj;                                                    \
    }

/* The desc fields PROBE_COUNTER_SKELETON(prefix) provides. */
#define PROBE_COUNTER_SKELETON_FIELDS(prefix)                                                      \
    .open = prefix##_skel_open, .load = prefix##_skel_load, .attach = prefix##_skel_attach,        \
    .destroy = prefix##_skel_destroy, .object = prefix##_skel_object

/* source_ops.supported for desc. */
int probe_counter_supported(const struct probe_counter_desc *desc, char *why, size_t whylen);

/* source_ops.create for desc (the state remembers desc). */
void *probe_counter_create(const struct probe_counter_desc *desc, char *why, size_t whylen);

/* The rest of source_ops, shared by every counter probe. */
int probe_counter_start(void *state, const struct event_sink *sink, char *why, size_t whylen);
int probe_counter_fd(void *state);
int probe_counter_dispatch(void *state);
int probe_counter_track(void *state, uint32_t pid, const char *root, bool add);
size_t probe_counter_metrics(void *state, char *buf, size_t len);
void probe_counter_destroy(void *state);

#endif
