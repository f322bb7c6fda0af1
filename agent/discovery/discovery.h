/* Rank discovery: which processes on this node are training ranks, of which
 * job, with which rank, parallel-group coordinates and GPU.
 *
 * A process is a rank when its /proc/PID/environ has RANK (or LOCAL_RANK, see
 * below) and WORLD_SIZE, and it passes the filters:
 *  - neither its comm nor the base name of its exe is on the deny list
 *    (launchers and shells that carry a rank's environment but are not the
 *    training process; default DISCOVERY_DEFAULT_DENY). Shells are on it
 *    because a rank started as `bash -c "python train.py"` or as a script
 *    (comm "train.sh", exe bash) would otherwise be tracked as the shell and
 *    its python dropped as a descendant. `python3 -m torch.distributed.run` has
 *    comm "python3" and cannot be denied by comm, but it has no RANK itself;
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
 * Environment values are hostile: numbers are plain decimal digits (at most
 * 10, no sign, no spaces), values have bounded lengths, rank < world_size.
 * A process whose RANK is present but unusable is not a rank; the reason is
 * in rank_info.reason and discovery logs it once per process, rate-limited.
 *
 * Job id: the first variable of job_vars (default DISCOVERY_DEFAULT_JOB_VARS)
 * that is set and not empty; TORCHELASTIC_RUN_ID="none" (torchrun's default
 * without --rdzv-id, shared by unrelated jobs) counts as unset. The value must
 * be printable ASCII and at most DISCOVERY_JOB_MAX bytes, else the process is
 * not a rank (no silent fallback that could merge jobs). With none of them:
 * "torch-MASTER_ADDR:MASTER_PORT" (every rank of an env:// job shares both;
 * a loopback MASTER_ADDR is replaced by the node name, since every
 * single-node job would share "localhost"), else "default@NODE".
 * rank_info.job_source names where the id came from.
 *
 * Global rank: RANK; without it, GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK
 * when both are set, else LOCAL_RANK when the job is on one node
 * (LOCAL_WORLD_SIZE unset or equal to WORLD_SIZE), else not a rank.
 * Local rank: LOCAL_RANK, else SLURM_LOCALID, else 0 with
 * DISCOVERY_LOCAL_RANK_UNKNOWN.
 *
 * Parallel groups (Megatron convention, tp fastest, then dp, then pp):
 *     rank = (pp * dp_size + dp) * tp_size + tp,   ep = dp % ep_size
 * (expert-parallel groups are carved out of the data-parallel dimension).
 * Sizes come from ARGUS_{TP,PP,DP,EP}_SIZE, else {TP,PP,DP,EP}_SIZE. When any
 * of tp/pp/dp size is given, a missing tp, pp or ep size is 1, a missing dp
 * size is WORLD_SIZE / (tp_size * pp_size); the product must equal
 * WORLD_SIZE. Coordinates are ARGUS_{DP,TP,PP,EP} when set, else derived from
 * the rank with the formula. A job that gives no sizes gets sizes 0
 * (unknown) and coordinates 0: discovery does not guess pure data
 * parallelism. Inconsistent or malformed group variables drop the groups
 * (sizes 0, DISCOVERY_GROUPS_DROPPED, rank_info.note) but keep the rank.
 *
 * GPU: CUDA_VISIBLE_DEVICES unset: gpu = LOCAL_RANK. Set to a list: the
 * entry at LOCAL_RANK (the entry itself when the list has one element, the
 * per-rank isolation of SLURM and Kubernetes); a numeric entry gives gpu, a
 * "GPU-..."/"MIG-..." entry gives gpu_uuid and gpu = -1. Like CUDA, the list
 * ends at the first invalid entry: empty, "-1" or "NoDevFiles" give gpu = -1
 * (no GPU). LOCAL_RANK past a longer list, or unknown with one: gpu = -1 and
 * DISCOVERY_GPU_UNKNOWN. Inside a container the index is the container's
 * numbering.
 *
 * Containers: rank_info.root is PROC_ROOT/PID/root. The paths /proc shows
 * the agent (exe, maps) are the container's own when the process is in
 * another mount namespace: they open as root + path (discovery_host_path).
 * For a chroot in the agent's namespace they are host paths already (the
 * inode tells the two apart). in_container says the process root differs
 * from the agent's.
 *
 * Threads: none. A struct discovery is used from one thread (the agent's
 * main loop); the pure functions are reentrant. */
#ifndef ARGUS_AGENT_DISCOVERY_H
#define ARGUS_AGENT_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define DISCOVERY_DEFAULT_JOB_VARS "ARGUS_JOB,TORCHELASTIC_RUN_ID,SLURM_JOB_ID"
#define DISCOVERY_DEFAULT_DENY "torchrun,torch_run,bash,sh,dash,zsh,srun,mpirun,mpiexec"

#define DISCOVERY_JOB_MAX 128            /* bytes of a job id, without the NUL */
#define DISCOVERY_NODE_MAX 256           /* bytes of a node name, with the NUL */
#define DISCOVERY_PATH_MAX 512           /* root and exe paths, with the NUL */
#define DISCOVERY_COMM_MAX 16            /* TASK_COMM_LEN */
#define DISCOVERY_UUID_MAX 64            /* "GPU-<uuid>" / "MIG-<uuid>", with the NUL */
#define DISCOVERY_VARS_MAX 8             /* entries of job_vars */
#define DISCOVERY_DENY_MAX 32            /* entries of deny_comms */
#define DISCOVERY_WORLD_MAX 16777216u    /* largest WORLD_SIZE accepted */
#define DISCOVERY_ENVIRON_MAX (1u << 20) /* bytes of environ read; the rest is ignored */

struct discovery_options {
    const char *proc_root; /* "/proc" when NULL; tests point it at a fake tree */
    const char *node;      /* node name from the agent config; NULL/"": hostname */
    const char *job_vars;  /* comma-separated, in order; NULL: DISCOVERY_DEFAULT_JOB_VARS */
    const char
        *deny_comms; /* comma-separated comm/exe names; NULL: DISCOVERY_DEFAULT_DENY, "": none */
};

enum discovery_flags {
    DISCOVERY_RANK_FROM_LOCAL = 1u << 0,    /* no RANK: rank derived from LOCAL_RANK */
    DISCOVERY_LOCAL_RANK_UNKNOWN = 1u << 1, /* no LOCAL_RANK/SLURM_LOCALID: local_rank 0 */
    DISCOVERY_GROUPS_EXPLICIT = 1u << 2,    /* some coordinate came from ARGUS_DP/TP/PP/EP */
    DISCOVERY_GROUPS_DERIVED = 1u << 3,     /* some coordinate derived from rank and sizes */
    DISCOVERY_GROUPS_DROPPED = 1u << 4,     /* group variables unusable: sizes 0 */
    DISCOVERY_GPU_UNKNOWN = 1u << 5,        /* CUDA_VISIBLE_DEVICES unusable: gpu -1 */
    DISCOVERY_ENVIRON_TRUNCATED = 1u << 6,  /* environ longer than DISCOVERY_ENVIRON_MAX */
};

/* One rank (or, when discovery_parse_environ returns 0, the reason it is
 * not one). Plain data: copy it freely. */
struct rank_info {
    uint32_t pid;
    uint32_t ppid;
    uint64_t start_time; /* /proc/PID/stat field 22, clock ticks since boot */
    char job[DISCOVERY_JOB_MAX + 1];
    char job_source[32]; /* variable the job came from, "MASTER_ADDR" or "default" */
    uint32_t rank, local_rank, world_size;
    uint32_t dp, tp, pp, ep;
    uint32_t dp_size, tp_size, pp_size, ep_size; /* 0 = unknown */
    int32_t gpu;                                 /* CUDA device index, -1 = none/unknown */
    char gpu_uuid[DISCOVERY_UUID_MAX];           /* from CUDA_VISIBLE_DEVICES, else "" */
    char node[DISCOVERY_NODE_MAX];
    char root[DISCOVERY_PATH_MAX]; /* PROC_ROOT/PID/root */
    char exe[DISCOVERY_PATH_MAX];  /* readlink /proc/PID/exe (see Containers), "" unreadable */
    char comm[DISCOVERY_COMM_MAX];
    bool in_container;  /* process root is not the agent's root */
    uint32_t flags;     /* enum discovery_flags */
    const char *note;   /* static: first non-fatal problem, or NULL */
    const char *reason; /* static: why this is not a rank, or NULL */
};

/* Called from discovery_scan/check_pid/exit_pid on the caller's thread. The
 * rank_info is owned by discovery and valid only during the call (copy what
 * you keep). Either may be NULL. */
struct discovery_callbacks {
    void (*on_rank_new)(void *ctx, const struct rank_info *ri);
    void (*on_rank_exit)(void *ctx, const struct rank_info *ri);
};

struct discovery_stats {
    uint64_t scans;
    uint64_t processes;  /* processes seen by the last scan */
    uint64_t ranks;      /* ranks tracked now */
    uint64_t evaluated;  /* environ reads (new processes, execs) */
    uint64_t rejected;   /* had RANK/LOCAL_RANK but were not usable ranks */
    uint64_t children;   /* skipped as descendants of a rank */
    uint64_t denied;     /* skipped by comm */
    uint64_t vanished;   /* gone between readdir and read (ENOENT/ESRCH) */
    uint64_t permission; /* EACCES/EPERM on environ */
    uint64_t pid_reused; /* same pid, new start time */
    uint64_t duplicates; /* new ranks whose (job, rank) another live rank holds */
};

struct discovery;

/* Create a discovery table. Options are copied (o may be NULL for all
 * defaults). Returns NULL with errno EINVAL (a list with too many or too
 * long entries, an over-long node or proc_root) or ENOMEM. Nothing is read
 * until the first scan. Free with discovery_free. */
struct discovery *discovery_new(const struct discovery_options *o);

/* Free d and every rank_info it holds; no callbacks. NULL is fine. */
void discovery_free(struct discovery *d);

/* Full scan of PROC_ROOT: reads /proc/PID/stat of every process, the environ
 * only of processes not seen before (or whose comm changed). Calls
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

/* The tracked rank with this pid, or NULL. Owned by d; valid until the next
 * scan/check/exit/free call. */
const struct rank_info *discovery_find(const struct discovery *d, uint32_t pid);

/* Copy the counters into out. */
void discovery_get_stats(const struct discovery *d, struct discovery_stats *out);

/* Pure: parse a NUL-separated environment (the bytes of /proc/PID/environ; a
 * missing final NUL is fine, entries without '=' are skipped, the first of
 * duplicate names wins like getenv) into out, which is zeroed first; the
 * process fields (pid, stat, root, exe, comm) are left empty. o gives the
 * job variables and the node (NULL: defaults, node ""). Returns 1 for a
 * rank, 0 for not a rank (out->reason says why), -EINVAL when buf is NULL
 * with len > 0, out is NULL or o is invalid. */
int discovery_parse_environ(const char *buf, size_t len, const struct discovery_options *o,
                            struct rank_info *out);

/* Write into buf (len bytes) the path under which the agent opens `path` as
 * the process of ri sees it ("/usr/lib/libnccl.so.2" -> root + that path).
 * Returns the length, or -ENAMETOOLONG, -EINVAL for a relative path. */
int discovery_host_path(const struct rank_info *ri, const char *path, char *buf, size_t len);

/* Fill r (initialised here) from ri for Batch.resources. The string fields
 * point into ri: r is valid only while ri is, and must not be freed with
 * protobuf-c's free functions. */
void discovery_fill_resource(const struct rank_info *ri, Argus__V1__Resource *r);

#endif
