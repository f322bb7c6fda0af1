/* Record shared by bpf/marker.bpf.c and agent/probes/probe_marker.c: one call of the
 * marker ABI (libargus-marker.so: argus_step, argus_phase_begin,
 * argus_phase_end). */
#ifndef ARGUS_BPF_MARKER_H
#define ARGUS_BPF_MARKER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ARGUS_MARKER_NAME_LEN 64

enum argus_marker_kind {
    ARGUS_MARKER_STEP = 1,
    ARGUS_MARKER_PHASE_BEGIN = 2,
    ARGUS_MARKER_PHASE_END = 3,
};

struct argus_marker_record {
    __u64 ts_ns;
    __u64 step; /* argus_step's argument */
    __u32 kind; /* enum argus_marker_kind */
    __u32 pid;  /* tgid */
    __u32 tid;
    __s32 name_len; /* bpf_probe_read_user_str's result: bytes with the NUL, or -errno */
    char name[ARGUS_MARKER_NAME_LEN];
};

#endif
