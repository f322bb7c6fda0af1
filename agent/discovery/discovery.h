/* agent/discovery/: which processes on this node are training ranks. Takes
 * in /proc (a periodic scan of every process: stat, and environ, exe and
 * root of the new ones) and the exec and exit events of the proc probe
 * (discovery_check_pid, discovery_exit_pid); gives out a rank_info per
 * tracked rank (job, rank, parallel-group coordinates, GPU, process root)
 * through the on_rank_new / on_rank_exit callbacks and discovery_find, and
 * the Resource of each rank for the batches. Two modules: the pure environ
 * parser (environ.h: the environment's rules) and the process table here.
 *
 * A process is a rank when its /proc/PID/environ makes it one (environ.h:
 * RANK or LOCAL_RANK, and WORLD_SIZE) and it passes the filters:
 *  - neither its comm nor the base name of its exe is on the deny list
 *    (launchers and shells that carry a rank's environment but are not the
 *    training process; default DISCOVERY_DEFAULT_DENY). Shells are on it
 *    because a rank started as `bash -c "python train.py"` or as a script
 *    (comm "train.sh", exe bash) would otherwise be tracked as the shell and
 *    its python dropped as a descendant. So are the wrappers that fork the
 *    command rather than exec it (timeout, time): `timeout 3600 python
 *    train.py` carries the rank's environment in the wrapper too. `python3 -m
 * torch.distributed.run` has comm "python3" and cannot be denied by comm, but it has no RANK
 * itself;
 *  - it is not a descendant of a tracked rank (or of such a descendant) with
 *    the same job and rank: dataloader workers, compile workers and
 *    subprocesses inherit the environment and are not ranks themselves.
 *
 * Processes are identified by (pid, start time: /proc/PID/stat field 22, in
 * clock ticks since boot), so a recycled pid is a new process. An exec keeps
 * both and replaces the environment: the exec event (discovery_check_pid)
 * and a changed comm make discovery read the process again. Zombies count as
 * exited. Limits: the environment is what the kernel kept from exec, so a
 * process that overwrote that area (setproctitle) before discovery first read
 * it is missed; a worker orphaned by a dead rank and first seen by a
 * restarted agent counts as a rank (its parent is no longer a rank).
 *
 * A process whose RANK is present but unusable (environ.h) is not a rank;
 * discovery logs the reason once per process, rate-limited.
 *
 * Ranks without a rank variable at exec (torch.multiprocessing.spawn or
 * multiprocessing with RANK set in the child's os.environ, which
 * /proc/PID/environ never shows): a process that is in a job
 * (DISCOVERY_JOB_HINT) or whose comm or exe name starts with an entry of
 * the watch list (default DISCOVERY_DEFAULT_WATCH), and is not a worker
 * of a tracked rank, is watched (on_watch: the agent tracks it in the
 * collectives probe) until the communicator it creates says its rank and
 * world size (discovery_comm_init). Its job is then (comm_job.h), in
 * order: a job variable of its own or its nearest ancestor's environment;
 * the address of the store its process group was made over
 * (discovery_rendezvous: c10d::TCPStore, "torch-HOST:PORT", the same on
 * every node, so one job spawned on several nodes is one job); its own or
 * its nearest ancestor's MASTER_ADDR:MASTER_PORT; else "job-PPID@NODE"
 * (job_source "parent": the ranks of one spawn on one node share their
 * parent). Only the first communicator counts (torch creates the world
 * group first).
 *
 * Network namespaces (netns_own, discovery.netns = own): a node may be one
 * network namespace of a shared host (one agent per pod network namespace;
 * the tests' two-node jobs). Then only processes whose /proc/PID/ns/net is
 * the agent's own are looked at, as they are first seen or exec; the others
 * are counted (other_netns) and left alone, rank or not.
 *
 * A process that looks like a rank but is not tracked is counted by
 * reason (enum discovery_skip, /metrics) and logged once with the reason.
 *
 * Containers: rank_info.root is PROC_ROOT/PID/root. The paths /proc shows
 * the agent (exe, maps) are the container's own when the process is in
 * another mount namespace: they open as root + path (discovery_host_path).
 * For a chroot in the agent's namespace they are host paths already, and
 * root + path misses (only the inode of the mapping tells the two cases
 * apart). in_container says the process root differs from the agent's.
 *
 * Threads: none. A struct discovery is used from one thread (the agent's
 * main loop); the pure functions are reentrant. */
#ifndef ARGUS_AGENT_DISCOVERY_H
#define ARGUS_AGENT_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/discovery/environ.h"
#include "agent/discovery/resource.h"

#define DISCOVERY_DEFAULT_DENY                                                                     \
    "torchrun,torch_run,bash,sh,dash,zsh,srun,mpirun,mpiexec,orterun,prterun,mpiexec.hydra,"       \
    "hydra_pmi_proxy,orted,prted,slurmstepd,timeout,time"

#define DISCOVERY_DEFAULT_WATCH "python"

#define DISCOVERY_DENY_MAX 32            /* entries of deny_comms */
#define DISCOVERY_ENVIRON_MAX (1u << 20) /* bytes of environ read; the rest is ignored */

/* Called from discovery_scan/check_pid/exit_pid on the caller's thread. The
 * rank_info is owned by discovery and valid only during the call (copy what
 * you keep). Either may be NULL. */
struct discovery_callbacks {
    void (*on_rank_new)(void *ctx, const struct rank_info *ri);
    void (*on_rank_exit)(void *ctx, const struct rank_info *ri);
    /* A process to watch for its communicator (add), or no more (it
     * became a rank: called before on_rank_new; it exited). root is
     * PROC_ROOT/PID/root. */
    void (*on_watch)(void *ctx, uint32_t pid, const char *root, bool add);
};

/* Why a process that looks like a rank is not tracked. */
enum discovery_skip {
    DISCOVERY_SKIP_INVALID,      /* "invalid_environ": rank variables present but unusable */
    DISCOVERY_SKIP_DENIED,       /* "denied": a launcher or shell on the deny list */
    DISCOVERY_SKIP_DESCENDANT,   /* "descendant": a worker of a rank (same job and rank) */
    DISCOVERY_SKIP_UNREADABLE,   /* "environ_unreadable": EACCES/EPERM on /proc/PID/environ */
    DISCOVERY_SKIP_NO_WATCH,     /* "no_communicator_probe": in a job, no rank variable, and
                                  * no collectives probe to read it from the communicator */
    DISCOVERY_SKIP_NO_RANK,      /* "no_rank": in a job, no rank variable, exited without
                                  * creating a communicator (and not a launcher of ranks) */
    DISCOVERY_SKIP_MISSED_INIT,  /* "communicator_before_watch": collectives from a watched
                                  * process whose communicator was made before the agent saw
                                  * it (job started before the agent) */
    DISCOVERY_SKIP_COMMUNICATOR, /* "invalid_communicator": rank >= size, or a bad job variable */
    DISCOVERY_SKIP_COUNT
};

/* The metric label of a reason ("invalid_environ"...); "unknown" out of range. */
const char *discovery_skip_name(enum discovery_skip reason);

struct discovery_stats {
    uint64_t scans;
    uint64_t processes;   /* processes seen by the last scan */
    uint64_t ranks;       /* ranks tracked now */
    uint64_t evaluated;   /* environ reads (new processes, execs) */
    uint64_t rejected;    /* had RANK/LOCAL_RANK but were not usable ranks */
    uint64_t children;    /* skipped as descendants of a rank */
    uint64_t denied;      /* skipped by comm */
    uint64_t vanished;    /* gone between readdir and read (ENOENT/ESRCH) */
    uint64_t permission;  /* EACCES/EPERM on environ */
    uint64_t pid_reused;  /* same pid, new start time */
    uint64_t duplicates;  /* new ranks whose (job, rank) another live rank holds */
    uint64_t watched;     /* processes watched for their communicator now */
    uint64_t other_netns; /* processes left alone in another network namespace (netns_own) */
    uint64_t skipped[DISCOVERY_SKIP_COUNT]; /* by reason, since start */
};

struct discovery;

/* Create a discovery table. Options are copied (o may be NULL for all
 * defaults). Returns NULL with errno EINVAL (a list with too many or too
 * long entries, an over-long node or proc_root), ENOMEM, or the error of
 * stat on /proc/self/ns/net (netns_own: the agent's own namespace; always
 * the real /proc, whatever proc_root). Nothing else is read until the
 * first scan. Free with discovery_free. */
struct discovery *discovery_new(const struct discovery_options *o);

/* Free d and every rank_info it holds; no callbacks. NULL is fine. */
void discovery_free(struct discovery *d);

/* Full scan of PROC_ROOT: reads /proc/PID/stat of every process, the environ
 * only of processes not seen before, whose comm changed, or whose environ
 * read empty (caught inside an exec; re-read for a few scans). Calls
 * on_rank_new for each new rank and on_rank_exit for each tracked rank that
 * is gone (or whose pid now belongs to another process). Processes vanishing
 * mid-read and permission errors are counted, not errors. Returns the number
 * of ranks tracked after the scan, or -errno when PROC_ROOT cannot be read. */
int discovery_scan(struct discovery *d, const struct discovery_callbacks *cb, void *ctx);

/* An exec event for pid: read it again now (its environment changed). Calls
 * on_rank_exit when pid was a rank (the old image) and on_rank_new when it is
 * one now. Returns 1 when pid is a tracked rank afterwards, 0 when not (gone,
 * not a rank, filtered), -errno on argument errors. */
int discovery_check_pid(struct discovery *d, uint32_t pid, const struct discovery_callbacks *cb,
                        void *ctx);

/* An exit event for pid: forget it, calling on_rank_exit when it was a
 * rank. Nothing happens when /proc still shows the same (pid, start time)
 * alive and not a zombie (a thread of it exited). Returns 1 when a rank was
 * removed, else 0. */
int discovery_exit_pid(struct discovery *d, uint32_t pid, const struct discovery_callbacks *cb,
                       void *ctx);

/* Whether a communicator can be seen (the collectives probe runs): without
 * it, processes are not watched and those in a job without a rank variable
 * are counted as DISCOVERY_SKIP_NO_WATCH. Default false. Applies to
 * processes classified after the call. */
void discovery_set_watching(struct discovery *d, bool on);

/* Process pid created a communicator: rank of size (the collectives probe).
 * A watched (or not yet classified) process becomes a rank: on_watch(remove)
 * then on_rank_new. A tracked rank, a denied process or a worker of a rank
 * is left as it is (a later communicator is a subgroup). Returns 1 when pid
 * became a rank, 0 when nothing changed, -EINVAL for a NULL d or pid 0. */
int discovery_comm_init(struct discovery *d, uint32_t pid, uint32_t rank, uint32_t size,
                        const struct discovery_callbacks *cb, void *ctx);

/* Process pid made a c10d store (the collectives probe): host and port of
 * a TCPStore, or host NULL for a store without an address (FileStore) or
 * an unreadable one. Kept for a watched (or unclassified) process, the
 * last one wins: the job of the rank its communicator makes it
 * (comm_job.h). Ignored for any other process. Returns 1 when pid now has
 * a store's job, 0 when not (host NULL, ignored), -EINVAL for a NULL d,
 * pid 0, or an address that names no job (environ_rendezvous_job: logged,
 * rate-limited; the store is forgotten), -ENOMEM. */
int discovery_rendezvous(struct discovery *d, uint32_t pid, const char *host, uint16_t port);

/* A collective call from pid, which is not a tracked rank: when pid is
 * watched, it created its communicator before the agent saw it; counted
 * (DISCOVERY_SKIP_MISSED_INIT) and logged once per process. */
void discovery_unidentified_call(struct discovery *d, uint32_t pid);

/* The tracked rank with this pid, or NULL. Owned by d; valid until the next
 * scan/check/exit/free call. */
const struct rank_info *discovery_find(const struct discovery *d, uint32_t pid);

/* Copy the counters into out. */
void discovery_get_stats(const struct discovery *d, struct discovery_stats *out);

#endif
