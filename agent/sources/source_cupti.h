/* The CUPTI source: the agent side of libargus-cupti.so. It listens on a
 * unix socket (SOCK_SEQPACKET) for the hello of each traced process, maps the
 * shared-memory span ring passed with it (agent/cupti/ring.h), and turns its
 * spans into agent events:
 *   - AGENT_EVENT_KERNEL for every kernel, memcpy and memset (GPU time);
 *   - AGENT_EVENT_STEP when an NVTX step range ("step", "ProfilerStep#N")
 *     begins, flags SOURCE_CUPTI_STEP_SAMPLED when its kernels are traced;
 *   - AGENT_EVENT_PHASE (flags SOURCE_CUPTI_PHASE_GPU) for every NVTX range
 *     named step / forward / backward / optimizer / ProfilerStep#N (or
 *     "## name ##"), projected onto the GPU: from the first kernel's start to
 *     the last kernel's end, on the stream with the most kernel time, of the
 *     kernels launched (runtime API, by correlation id) inside the range on
 *     the range's thread;
 *   - AGENT_EVENT_DROPS with reasons "cupti_no_buffer", "cupti_ring_full",
 *     "cupti_no_agent";
 *   - name strings through event_sink.name, once per connection.
 * The source also sends sampling changes to every connected process. The
 * socket is mode 0660 (owner the agent, group socket_group), and each hello
 * is checked against its peer's credentials (agent/sources/cupti_peer.h). */
#ifndef ARGUS_AGENT_SOURCE_CUPTI_H
#define ARGUS_AGENT_SOURCE_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/cupti/ring.h"
#include "agent/sources/source.h"

#define SOURCE_CUPTI_STEP_SAMPLED AGENT_EVENT_FLAG_SAMPLED /* agent_event.flags of STEP */
#define SOURCE_CUPTI_PHASE_GPU AGENT_EVENT_FLAG_GPU /* agent_event.flags of PHASE: GPU time */

struct source_cupti_config {
    const char *socket_path;     /* NULL: ARGUS_AGENT_SOCKET, else CUPTI_SOCKET_DEFAULT */
    const char *socket_group;    /* the socket is mode 0660 with this group (name or gid;
                                  * NULL or "": the agent's) */
    uint32_t max_clients;        /* 0: 256 */
    uint64_t phase_horizon_ns;   /* 0: 2 s; an ended range waits this long for kernels */
    uint32_t sample_mode;        /* enum cupti_sample_mode sent to every new process */
    uint32_t sample_k, sample_n; /* k of n steps, or k ms of every n ms */
};

struct source_cupti_stats {
    uint64_t clients;                   /* hellos accepted */
    uint64_t connected;                 /* processes connected now */
    uint64_t spans;                     /* spans read from rings */
    uint64_t kernels;                   /* KERNEL events delivered */
    uint64_t phases;                    /* PHASE events delivered */
    uint64_t steps;                     /* STEP events delivered */
    uint64_t drops[CUPTI_DROP_REASONS]; /* reported by the libraries */
    uint64_t bad_hellos;
    uint64_t bad_peers;   /* hellos whose pid or uid did not match the peer (cupti_peer.h) */
    uint64_t step_asides; /* sum over processes of times they stepped aside */
};

extern const struct source_ops source_cupti_ops;

/* Switch the sampling of every connected process (and of later ones): mode
 * enum cupti_sample_mode, k of n steps or k ms of every n ms. Returns 0, or
 * -EINVAL for a bad mode or k > n. */
int source_cupti_set_sampling(void *state, uint32_t mode, uint32_t k, uint32_t n);

/* Copy the counters. */
void source_cupti_get_stats(void *state, struct source_cupti_stats *out);

#endif
