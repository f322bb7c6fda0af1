/* The io probe (see probe_io.h). BPF side: bpf/io.bpf.c; the user side is the
 * shared counter probe (agent/probes/probe_counter.h). */
#include "agent/probes/probe_io.h"

#include "agent/probes/probe_common.h"
#include "agent/probes/probe_counter.h"
#include "bpf/counters.h"
#include "bpf/io.skel.h"

PROBE_COUNTER_SKELETON(io)

static const char *const io_tracepoints[] = {"block_rq_issue", "block_rq_complete", NULL};

static const struct probe_counter_desc io_desc = {
    .name = "io",
    .tracepoints = io_tracepoints,
    .counter = AGENT_COUNTER_IO_WAIT_NS,
    .tracked_map = "io_tracked",
    .counter_map = "io_wait_ns",
    PROBE_COUNTER_SKELETON_FIELDS(io),
};

static int io_supported(char *why, size_t whylen)
{
    return probe_counter_supported(&io_desc, why, whylen);
}

static void *io_create(const void *config, char *why, size_t whylen)
{
    return probe_counter_create(&io_desc, why, whylen);
}

const struct source_ops probe_io_ops = {
    .name = "io",
    .supported = io_supported,
    .create = io_create,
    .start = probe_counter_start,
    .fd = probe_counter_fd,
    .dispatch = probe_counter_dispatch,
    .track = probe_counter_track,
    .metrics = probe_counter_metrics,
    .destroy = probe_counter_destroy,
};
