/* A CPU stack sample of the stacks probe at its two stages: raw, as the
 * main loop copies its addresses out of the BPF stack map and pushes them to
 * the symbolizer thread, and named, as the symbolizer gives it back with
 * frame ids (agent/probes/stacks_worker.h). The probe
 * (agent/probes/probe_stacks.h) and the symbolizer both speak these, so
 * they live here and neither header includes the other. */
#ifndef ARGUS_AGENT_STACKS_SAMPLE_H
#define ARGUS_AGENT_STACKS_SAMPLE_H

#include <stdint.h>

#define PROBE_STACKS_FRAMES 24 /* frames kept per sample, leaf first */

/* A sample as the main loop records it: addresses, no names. ips holds
 * nkernel kernel addresses, then nuser user ones, each stack leaf first. */
struct stacks_raw {
    uint64_t ts_ns;
    uint32_t pid;
    uint16_t nkernel, nuser;
    uint64_t ips[PROBE_STACKS_FRAMES];
};

/* One symbolized sample: frames[0] is the leaf; ids index the symbolizer's
 * name table (stacks_worker_name; kernel frames first when the sample was
 * taken in the kernel). */
struct probe_stacks_sample {
    uint64_t ts_ns;
    uint32_t pid;
    uint32_t nframes;
    uint32_t frames[PROBE_STACKS_FRAMES];
};

#endif
