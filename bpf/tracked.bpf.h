/* BPF side only: the pid filter every probe but proc shares. Each probe
 * object has its own hash map of tracked processes, key tgid (u32), value 1
 * (u8); user space mirrors the ranks it tracks into it (probe_pids_update in
 * agent/probes/probe_common.h) and finds it by its name, <probe>_tracked
 * (the skeleton's maps.<probe>_tracked, or bpf_object__find_map_by_name).
 * A BPF program asks bpf_map_lookup_elem(&<probe>_tracked, &tgid). */
#ifndef ARGUS_BPF_TRACKED_BPF_H
#define ARGUS_BPF_TRACKED_BPF_H

#define ARGUS_TRACKED_MAX 4096 /* processes one probe can track */

/* Define the tracked-process map `name` (say calls_tracked). */
#define ARGUS_TRACKED_MAP(name)                                                                    \
    struct {                                                                                       \
        __uint(type, BPF_MAP_TYPE_HASH);                                                           \
        __uint(max_entries, ARGUS_TRACKED_MAX);                                                    \
        __type(key, __u32);                                                                        \
        __type(value, __u8);                                                                       \
    } name SEC(".maps")

#endif
