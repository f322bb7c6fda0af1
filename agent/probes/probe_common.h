/* agent/probes/: the eBPF probes, each an event source (agent/sources/source.h)
 * around one BPF object of bpf/. In: kernel tracepoints (process exec and
 * exit, scheduler switches and wakeups, TCP retransmits, block I/O), uprobes
 * on the libraries the ranks map (NCCL and c10d collectives, CUDA syncs and
 * allocations, libargus-marker.so steps and phases), CPU stack samples, and
 * from the agent the ranks to watch (track(), mirrored into each object's
 * <probe>_tracked map). Out: agent events (agent/sources/event.h) to the
 * agent's event_sink: PROC_EXEC/PROC_EXIT for discovery, COLLECTIVE, STEP
 * and PHASE events, COUNTER deltas (off-CPU, run queue, sync wait, alloc,
 * retransmits, I/O wait), DROPS; and, on request, a rank's top stack frames
 * over a step (probe_stacks.h).
 *
 * This header is what the probes share: the supported() checks, the list of
 * tracked ranks, a BPF hash map of tracked tgids, and uprobe attachment per
 * library inode (found through /proc/PID/maps). */
#ifndef ARGUS_AGENT_PROBE_COMMON_H
#define ARGUS_AGENT_PROBE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clock.h"

struct bpf_link;
struct event_sink;
struct bpf_map;
struct bpf_program;

/* Can BPF programs with BTF (tp_btf, CO-RE) be loaded here: root (or
 * CAP_BPF+CAP_PERFMON) and /sys/kernel/btf/vmlinux. Returns 0 or -errno with
 * a sentence in why. No side effects. */
int probe_bpf_supported(char *why, size_t whylen);

/* probe_bpf_supported, and every tp_btf tracepoint in tps (NULL-terminated,
 * e.g. "sched_switch") exists in the kernel's BTF. No side effects. */
int probe_tp_btf_supported(const char *const *tps, char *why, size_t whylen);

/* probe_bpf_supported, and the perf `uprobe` PMU exists (CONFIG_UPROBES). */
int probe_uprobe_supported(char *why, size_t whylen);

/* probe_bpf_supported, and perf events exist (CONFIG_PERF_EVENTS). */
int probe_perf_supported(char *why, size_t whylen);

/* Route libbpf's messages to our log at debug level (idempotent). */
void probe_libbpf_logging(void);

/* Tracked ranks, kept by each probe for re-scans and cleanup. */
struct probe_pid {
    uint32_t pid;
    char root[128];        /* e.g. "/proc/PID/root" */
    uint64_t next_scan_ns; /* probe_uprobes_rescan: when its maps are read again */
    uint64_t scan_every_ns;
};

struct probe_pids {
    struct probe_pid *v;
    size_t n;
};

/* Add (add=true) or remove pid, and mirror it into the BPF hash map `map`
 * (u32 tgid -> u8; NULL for none). root NULL means /proc/PID/root. Returns
 * 0 or -errno. Adding a tracked pid again only updates its root. */
int probe_pids_update(struct probe_pids *pids, struct bpf_map *map, uint32_t pid, const char *root,
                      bool add);
void probe_pids_free(struct probe_pids *pids);

/* A function to uprobe: its symbol and the attach cookie that tells the
 * shared BPF program which one fired. A cookie with PROBE_UPROBE_ENTRY_ONLY
 * gets no return probe even where the probe has an exit program (its entry
 * program sees the bit: bpf/calls.h ARGUS_CALL_ENTRY_ONLY). */
#define PROBE_UPROBE_ENTRY_ONLY (UINT64_C(1) << 63)

struct probe_uprobe_func {
    const char *symbol;
    uint64_t cookie;
};

/* uprobes on the functions of a set of libraries, attached once per library
 * inode for all processes (the BPF program filters by pid). */
struct probe_uprobes {
    struct bpf_program *enter; /* required */
    struct bpf_program *exit;  /* uretprobe, or NULL */
    const struct probe_uprobe_func *funcs;
    size_t nfuncs;
    const char *const *libs; /* basename prefixes, e.g. "libnccl.so"; NULL-terminated */
    /* private */
    struct {
        dev_t dev;
        ino_t ino;
    } * inodes;
    size_t ninodes;
    bool multi; /* one uprobe_multi link per library and program (probe_uprobes_prepare) */
    struct bpf_link **links;
    size_t nlinks;
    int *link_fds; /* the uprobe_multi links */
    size_t nlink_fds;
    uint64_t attached; /* functions attached so far */
    uint64_t failures;
};

/* Before the programs are loaded: where the kernel has uprobe_multi links
 * (6.6+), load enter and exit (NULL for none) for them and return true (set
 * it as the probe_uprobes' multi): a library's functions then take one link
 * per program, removed at once. Each classic uprobe's removal waits for a
 * grace period under a global lock (~110 ms here, one after the other even
 * from several threads: 36 of them made the agent's exit 4 s). */
bool probe_uprobes_prepare(struct bpf_program *enter, struct bpf_program *exit);

/* Does path's basename start with one of libs? Pure. */
bool probe_uprobes_lib_matches(const char *const *libs, const char *path);

/* Attach to every function of funcs that path (absolute, as this process
 * can open it) defines, unless that inode was done before. Returns the
 * number of functions newly attached (0 when already done or none defined),
 * or -errno when the file cannot be read. */
int probe_uprobes_attach_file(struct probe_uprobes *u, const char *path);

/* Read /proc/PID/maps and attach to each matching library, opened through
 * root (NULL = /proc/PID/root). Returns the number newly attached or -errno
 * (-ESRCH when the process is gone). */
int probe_uprobes_scan(struct probe_uprobes *u, uint32_t pid, const char *root);

/* Counter maps are walked every dispatch while ranks are tracked, and once
 * a second when none is: a walk visits every bucket of the hash map, even an
 * empty one, and only node-level counts (net) can change then. */
#define PROBE_IDLE_POLL_NS NSEC_PER_SEC
bool probe_idle_skip(const struct probe_pids *pids, uint64_t *next_ns, uint64_t now_ns);

/* Re-scan the maps of the tracked pids whose time has come, for libraries
 * mapped since (a late dlopen of libnccl): one second after a pid was
 * added, then at doubling intervals up to PROBE_RESCAN_MAX_NS while scans
 * attach nothing new. Reading the maps of a PyTorch rank (~1,700 lines) is
 * the costliest thing a probe does; libraries are mostly mapped at start. */
#define PROBE_RESCAN_MIN_NS NSEC_PER_SEC
#define PROBE_RESCAN_MAX_NS (16 * NSEC_PER_SEC)
void probe_uprobes_rescan(struct probe_uprobes *u, struct probe_pids *pids, uint64_t now_ns);

/* Destroy every link. The struct may be reused after. */
void probe_uprobes_detach(struct probe_uprobes *u);

/* When a BPF-side drop counter grew past *reported, emit one
 * AGENT_EVENT_DROPS (reason: a static string) and advance *reported.
 * Returns 1 when an event was emitted, else 0. */
int probe_report_drops(const struct event_sink *sink, uint64_t dropped, uint64_t *reported,
                       const char *reason);

/* What a ring-buffer probe gives the agent as its fd: an epoll fd that is
 * readable when the ring wakes it (BPF side: bpf/ring.h, a quarter full) or
 * every interval (a timerfd), so records wait at most one interval, bursts
 * do not overflow the ring, and periodic work (re-scans of /proc/PID/maps)
 * runs when nothing arrives. */
struct probe_wakeup {
    int epfd;
    int timerfd;
};

/* Returns 0 or -errno; w's fds are -1 on failure. The timer fires on the
 * multiples of interval_ns of CLOCK_MONOTONIC, so the timers of all probes
 * (and the agent's own periodic work, on the same grid) expire together
 * and the agent wakes once for all of them. */
int probe_wakeup_open(struct probe_wakeup *w, int ring_epoll_fd, uint64_t interval_ns);

/* Clear the timer's readiness (call from dispatch). */
void probe_wakeup_drain(struct probe_wakeup *w);
void probe_wakeup_close(struct probe_wakeup *w);

/* Append "NAME VALUE\n" metric lines; returns bytes written (never more
 * than len, truncating). */
size_t probe_metric(char *buf, size_t len, const char *probe, const char *name, uint64_t value);

/* Counters summed in a BPF hash map (u32 key -> u64 value; key 0 = node,
 * else tgid): what was last emitted per key. */
struct probe_counter_last {
    uint32_t key;
    uint64_t value;
};

struct probe_counter_table {
    struct probe_counter_last *v;
    size_t n, cap;
    bool one_by_one; /* the kernel has no batch lookup for the map: a key at a time */
};

struct agent_event;
struct event_sink;

/* One key's growth (cur against last) as a COUNTER event at ts (pure).
 * Returns 1 when out was written, 0 when the value did not grow. */
int probe_counter_decode(uint32_t key, uint64_t cur, uint64_t last, uint32_t counter, uint64_t ts,
                         struct agent_event *out);

#define PROBE_COUNTERS_BATCH 64 /* keys a counter map's poll reads a syscall */

/* Read every key of map_fd (a hash of u32 -> u64) and emit what grew to
 * sink: in batches of up to PROBE_COUNTERS_BATCH keys a syscall (5.6+),
 * else a lookup a key. Returns events emitted or -errno. */
int probe_counters_poll(int map_fd, struct probe_counter_table *t, uint32_t counter,
                        const struct event_sink *sink);
void probe_counters_free(struct probe_counter_table *t);
#endif
