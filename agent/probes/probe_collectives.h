/* The `collectives` probe: uprobes on NCCL (libnccl.so.2) and PyTorch c10d
 * process groups (libtorch_cpu.so: ProcessGroupGloo, libtorch_cuda.so:
 * ProcessGroupNCCL) found in each tracked rank's mapped libraries. Emits one
 * AGENT_EVENT_COLLECTIVE per call: host arrival time (enqueue time: NCCL is
 * asynchronous), a per-(pid, communicator) sequence number, and bytes where
 * the arguments give them (NCCL: count * dtype size; c10d: 0). c10d::Work::wait
 * is probed too: it gives no event, only the host end of a synchronous c10d
 * collective to the on_call observer. So is the creation of a communicator
 * (c10d::ProcessGroup and c10d::Backend constructors, ncclCommInitRank,
 * ncclCommInitRankConfig): no event either, the rank and size to the
 * on_comm_init observer, for discovery of ranks whose environment lacks
 * them (torch.multiprocessing.spawn). Processes the agent watches for that
 * are tracked like ranks (track()), so that their libraries are found.
 * And c10d::ProcessGroupGloo::nextTag, which every gloo collective calls
 * (through the PLT) for its tag: it returns the group's own collective
 * counter, the same number on every rank for the same collective whenever
 * the agent attached. It gives no event either: the c10d call around it on
 * the same thread carries it as its sequence number (lib_seq); other calls
 * are numbered per (pid, communicator) from the first one the probe saw.
 * Events carry the communicator's id shared by its members (comm_id: see
 * agent/probes/coll_ident.h, from the c10d::PrefixStore made before a c10d
 * group, or the ncclUniqueId given to ncclCommInitRank) and, for gloo, the
 * host end of the collective (AsyncWork constructor and finishWorkGloo),
 * which reads the traced process's memory (process_vm_readv: CAP_SYS_PTRACE)
 * for the store's prefix and the new ncclComm_t. And the stores a process
 * group is made over (c10d::TCPStore's constructor, read in the kernel at
 * entry, and c10d::FileStore's): no event, the store's address to the
 * on_rendezvous observer, which names the job of a spawned rank the same
 * on every node (agent/discovery/discovery.h). */
#ifndef ARGUS_AGENT_PROBE_COLLECTIVES_H
#define ARGUS_AGENT_PROBE_COLLECTIVES_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/sources/source.h"

struct argus_call_record;
struct argus_call_text;

struct probe_collectives_call;

struct probe_collectives_config {
    bool all_processes;       /* no pid filter (benchmarks) */
    const char *const *files; /* extra absolute library paths to attach at start, NULL-terminated */
    /* Optional observer of every collective with its host return time
     * (exit_ns), on the dispatching thread. For a c10d call followed on the
     * same thread by c10d::Work::wait (a synchronous collective), exit_ns is
     * the wait's return, so the observer sees it one call (or at most 20
     * ticks) late. Step detection (agent/steps/stepdetect.h) needs the return
     * time, which agent_event.collective does not carry yet. */
    void (*on_call)(void *ctx, uint32_t pid, uint64_t enter_ns, uint64_t exit_ns,
                    const struct probe_collectives_call *call);
    void *on_call_ctx;
    /* Optional: a process created a communicator (rank of size), on the
     * dispatching thread, with on_call_ctx. name is static. Every creation
     * is reported: the world group's comes first (torch makes it first). */
    void (*on_comm_init)(void *ctx, uint32_t pid, uint32_t rank, uint32_t size, const char *name);
    /* Optional: the c10d gloo call (comm, lib_seq) of pid, already given to
     * on_call, finished at done_ns (its host end: see done_ns below). */
    void (*on_done)(void *ctx, uint32_t pid, uint64_t comm, int64_t lib_seq, uint64_t done_ns);
    /* Optional: pid made a c10d store (the rendezvous of the process group
     * it makes next), on the dispatching thread, with on_call_ctx: a
     * TCPStore's host (valid during the call) and port, or host NULL for a
     * store without an address (FileStore) or one whose address could not
     * be read (counted in memory_read_errors_total). */
    void (*on_rendezvous)(void *ctx, uint32_t pid, const char *host, uint16_t port);
};

/* One decoded call. name points to a static string. */
struct probe_collectives_call {
    const char *name; /* "ncclAllReduce", "c10d::ProcessGroupGloo::allreduce" */
    uint64_t name_id;
    uint64_t count; /* elements (NCCL), 0 when unknown */
    uint32_t dtype; /* ncclDataType_t, UINT32_MAX when unknown */
    uint64_t bytes; /* count * size of dtype, 0 when unknown */
    uint64_t comm;  /* ncclComm_t, or the c10d ProcessGroup object */
    uint64_t stream;
    int64_t ret;
    bool c10d; /* a c10d process-group call (asynchronous: see wait) */
    bool wait; /* c10d::Work::wait: no collective itself, it ends the last c10d call */
    bool init; /* a communicator's creation: no collective, init_rank of init_size */
    uint32_t init_rank, init_size;
    bool tag; /* ProcessGroupGloo::nextTag: no collective itself; ret is the group's counter */
    /* The library's own sequence number of this call in its group (gloo's
     * tag), -1 when the library gave none (NCCL, gloo send/recv). */
    int64_t lib_seq;
    /* The communicator's id shared by all its members (coll_ident.h), 0
     * when unknown (the probe did not see it made). For a communicator's
     * creation: its id (NCCL: from the unique id; c10d: filled by the probe). */
    uint64_t group;
    /* The host end of the collective, 0 when unknown: gloo's work finished
     * (AsyncWork::finishWorkGloo) or its Work::wait returned. Never the
     * return of an asynchronous enqueue (NCCL, c10d). */
    uint64_t done_ns;
    bool store;      /* c10d::PrefixStore made (comm: the store object): names the next group */
    bool work;       /* gloo AsyncWork made (comm: the work object), inside a c10d call */
    bool done;       /* gloo AsyncWork::finishWorkGloo (comm: the work object) */
    bool rendezvous; /* a c10d store made (TCPStore: probe_collectives_rendezvous) */
};

/* Decode a raw record (pure: no I/O). Returns 0, or -EINVAL for an unknown
 * cookie. */
int probe_collectives_decode(const struct argus_call_record *rec,
                             struct probe_collectives_call *out);

/* The address of a c10d::TCPStore constructor's record (decoded as a
 * rendezvous): its host, NUL-terminated, into host (hostlen bytes), and
 * its port (TCPStoreOptions begins with the uint16_t port). Pure. Returns
 * 0; -EINVAL when t is not such a record or the host has spaces or
 * control characters; -ENODATA for an empty host (or one the kernel could
 * not read); -ENAMETOOLONG when the host did not fit in the record or in
 * host. */
int probe_collectives_rendezvous(const struct argus_call_text *t, char *host, size_t hostlen,
                                 uint16_t *port);

/* Size in bytes of an ncclDataType_t, 0 for an unknown type. Pure. */
uint32_t probe_collectives_dtype_size(uint32_t dtype);

extern const struct source_ops probe_collectives_ops;

#endif
