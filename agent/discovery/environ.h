/* The environ parser of rank discovery: the bytes of /proc/PID/environ in,
 * a struct rank_info out (job, rank, parallel-group coordinates, GPU), or
 * the reason the process is not a rank. Pure: no /proc, no log, no state;
 * the process table (agent/discovery/discovery.h) reads the files, fills
 * the process fields and applies the filters.
 *
 * A process is a rank candidate when its environment has RANK (or
 * LOCAL_RANK, see below) and WORLD_SIZE (torchrun, torchelastic, a plain
 * `python train.py` with the variables at exec), or else a launcher's
 * rank and size, the first set of: SLURM_PROCID + SLURM_NTASKS (srun;
 * only with SLURM_STEP_ID, since a batch script has SLURM_PROCID too),
 * OMPI_COMM_WORLD_RANK + OMPI_COMM_WORLD_SIZE (Open MPI's mpirun),
 * PMI_RANK + PMI_SIZE (MPICH/Intel MPI hydra). A rank from a launcher's
 * variables has DISCOVERY_RANK_FROM_LAUNCHER; rank_info.rank_source names
 * the variable. A process with none of them whose environment still says
 * it belongs to a job (WORLD_SIZE, MASTER_ADDR, MASTER_PORT or a job
 * variable) has DISCOVERY_JOB_HINT: its rank may come from the
 * communicator it creates (environ_parse_comm: torch.multiprocessing.spawn
 * sets RANK in the child's os.environ, which /proc/PID/environ never shows).
 *
 * Environment values are hostile: numbers are plain decimal digits (at most
 * 10, no sign, no spaces), values have bounded lengths, rank < world_size.
 * A process whose RANK is present but unusable is not a rank; the reason is
 * in rank_info.reason.
 *
 * Job id: the first variable of job_vars (default DISCOVERY_DEFAULT_JOB_VARS)
 * that is set and not empty; TORCHELASTIC_RUN_ID="none" (torchrun's default
 * without --rdzv-id, shared by unrelated jobs) counts as unset; SLURM_JOB_ID
 * gets ".SLURM_STEP_ID" when that is set (two srun steps are two jobs). The value must
 * be printable ASCII and at most DISCOVERY_JOB_MAX bytes, else the process is
 * not a rank (no silent fallback that could merge jobs). With none of them:
 * "torch-MASTER_ADDR:MASTER_PORT" (every rank of an env:// job shares both;
 * a loopback MASTER_ADDR is replaced by the node name, since every
 * single-node job would share "localhost"), else "default@NODE".
 * rank_info.job_source names where the id came from. A rank whose rank
 * comes from its communicator may get its job elsewhere (discovery.h).
 *
 * Restart: TORCHELASTIC_RESTART_COUNT (torchelastic's attempt; 0 when unset,
 * 0 with a note when not a number).
 *
 * Global rank: RANK; without it, GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK
 * when both are set, else LOCAL_RANK when the job is on one node
 * (LOCAL_WORLD_SIZE unset or equal to WORLD_SIZE), else not a rank.
 * Local rank: LOCAL_RANK, else SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, else 0 with DISCOVERY_LOCAL_RANK_UNKNOWN.
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
 * Threads: every function here is reentrant. */
#ifndef ARGUS_AGENT_DISCOVERY_ENVIRON_H
#define ARGUS_AGENT_DISCOVERY_ENVIRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISCOVERY_DEFAULT_JOB_VARS "ARGUS_JOB,TORCHELASTIC_RUN_ID,SLURM_JOB_ID,PMIX_NAMESPACE"

#define DISCOVERY_JOB_MAX 128         /* bytes of a job id, without the NUL */
#define DISCOVERY_NODE_MAX 256        /* bytes of a node name, with the NUL */
#define DISCOVERY_PATH_MAX 512        /* root and exe paths, with the NUL */
#define DISCOVERY_COMM_MAX 16         /* TASK_COMM_LEN */
#define DISCOVERY_UUID_MAX 64         /* "GPU-<uuid>" / "MIG-<uuid>", with the NUL */
#define DISCOVERY_VARS_MAX 8          /* entries of job_vars */
#define DISCOVERY_VAR_NAME_MAX 64     /* bytes of a job variable's name, with the NUL */
#define DISCOVERY_WORLD_MAX 16777216u /* largest WORLD_SIZE accepted */

/* Options of discovery: the parser uses node and job_vars, the process
 * table (discovery.h) all of them. */
struct discovery_options {
    const char *proc_root; /* "/proc" when NULL; tests point it at a fake tree */
    const char *node;      /* node name from the agent config; NULL/"": hostname */
    const char *job_vars;  /* comma-separated, in order; NULL: DISCOVERY_DEFAULT_JOB_VARS */
    const char
        *deny_comms;   /* comma-separated comm/exe names; NULL: DISCOVERY_DEFAULT_DENY, "": none */
    const char *watch; /* comma-separated comm/exe name prefixes watched for a communicator
                        * without job variables; NULL: DISCOVERY_DEFAULT_WATCH, "": none */
    bool netns_own;    /* only processes in the agent's network namespace (discovery.h) */
};

enum discovery_flags {
    DISCOVERY_RANK_FROM_LOCAL = 1u << 0,    /* no RANK: rank derived from LOCAL_RANK */
    DISCOVERY_LOCAL_RANK_UNKNOWN = 1u << 1, /* no LOCAL_RANK/SLURM_LOCALID: local_rank 0 */
    DISCOVERY_GROUPS_EXPLICIT = 1u << 2,    /* some coordinate came from ARGUS_DP/TP/PP/EP */
    DISCOVERY_GROUPS_DERIVED = 1u << 3,     /* some coordinate derived from rank and sizes */
    DISCOVERY_GROUPS_DROPPED = 1u << 4,     /* group variables unusable: sizes 0 */
    DISCOVERY_GPU_UNKNOWN = 1u << 5,        /* CUDA_VISIBLE_DEVICES unusable: gpu -1 */
    DISCOVERY_ENVIRON_TRUNCATED = 1u << 6,  /* environ longer than DISCOVERY_ENVIRON_MAX */
    DISCOVERY_RANK_FROM_LAUNCHER = 1u << 7, /* rank from SLURM/Open MPI/PMI variables */
    DISCOVERY_RANK_FROM_COMM = 1u << 8,     /* rank and size from a communicator's creation */
    DISCOVERY_JOB_HINT = 1u << 9,           /* not a candidate, but in a job (see above) */
};

/* One rank (or, when discovery_parse_environ returns 0, the reason it is
 * not one). The parser fills the environment's fields; the process table
 * fills pid, ppid, start_time, root, exe, comm and in_container. Plain data:
 * copy it freely. */
struct rank_info {
    uint32_t pid;
    uint32_t ppid;
    uint64_t start_time; /* /proc/PID/stat field 22, clock ticks since boot */
    char job[DISCOVERY_JOB_MAX + 1];
    char job_source[32];  /* variable the job came from, "MASTER_ADDR" or "default" (the
                           * process table: an ancestor's variable, "TCPStore", "parent") */
    char rank_source[32]; /* "RANK", "LOCAL_RANK", a launcher's variable, "communicator" */
    uint32_t rank, local_rank, world_size;
    uint32_t restart; /* TORCHELASTIC_RESTART_COUNT, 0 unset */
    uint32_t dp, tp, pp, ep;
    uint32_t dp_size, tp_size, pp_size, ep_size; /* 0 = unknown */
    int32_t gpu;                                 /* CUDA device index, -1 = none/unknown */
    char gpu_uuid[DISCOVERY_UUID_MAX];           /* from CUDA_VISIBLE_DEVICES, else "" */
    char node[DISCOVERY_NODE_MAX];
    char root[DISCOVERY_PATH_MAX]; /* PROC_ROOT/PID/root */
    char exe[DISCOVERY_PATH_MAX];  /* readlink PROC_ROOT/PID/exe (discovery.h), "" unreadable */
    char comm[DISCOVERY_COMM_MAX];
    bool in_container;  /* process root is not the agent's root */
    uint32_t flags;     /* enum discovery_flags */
    const char *note;   /* static: first non-fatal problem, or NULL */
    const char *reason; /* static: why this is not a rank, or NULL */
};

/* Pure: parse a NUL-separated environment (the bytes of /proc/PID/environ; a
 * missing final NUL is fine, entries without '=' are skipped, the first of
 * duplicate names wins like getenv) into out, which is zeroed first; the
 * process fields (pid, stat, root, exe, comm) are left empty. o gives the
 * job variables and the node (NULL: defaults, node ""); its proc_root and
 * deny_comms are not looked at. Returns 1 for a rank, 0 for not a rank
 * (out->reason says why), -EINVAL when buf is NULL with len > 0, out is
 * NULL or o's node or job_vars are invalid (environ_config_init). */
int discovery_parse_environ(const char *buf, size_t len, const struct discovery_options *o,
                            struct rank_info *out);

/* --- for the process table: the options checked once, a three-way result */

/* The parser's part of the options, checked and split. */
struct environ_config {
    char node[DISCOVERY_NODE_MAX];
    char job_vars[DISCOVERY_VARS_MAX][DISCOVERY_VAR_NAME_MAX];
    size_t njob_vars;
};

/* Fill c from o's node and job_vars (o NULL: defaults, node ""). Returns 0,
 * or -EINVAL for a node that is too long or not printable, or a job_vars
 * list with too many or too long entries. */
int environ_config_init(struct environ_config *c, const struct discovery_options *o);

/* Split a comma-separated list (spaces around entries trimmed, empty
 * entries skipped) into *count slots of slot_len bytes each, NUL-terminated,
 * at most max of them. Returns 0, or -EINVAL when an entry does not fit or
 * there are more than max. */
int environ_split_list(const char *text, char *slots, size_t slot_len, size_t max, size_t *count);

/* The job a rendezvous names: the address of a c10d::TCPStore (host,
 * port) as MASTER_ADDR and MASTER_PORT do ("torch-HOST:PORT", a loopback
 * host replaced by c's node), into job (len bytes). Returns 0, or -EINVAL
 * for a NULL, empty, over-long (64) or unprintable host, or port 0. */
int environ_rendezvous_job(const struct environ_config *c, const char *host, uint16_t port,
                           char *job, size_t len);

/* Did ri's job come from a job variable (not MASTER_ADDR, not the default)? */
bool environ_job_from_variable(const struct rank_info *ri);

enum environ_result {
    ENVIRON_NOT_CANDIDATE, /* neither RANK nor LOCAL_RANK: not a rank, nothing to report */
    ENVIRON_REJECTED,      /* rank variables present but unusable: out->reason says why */
    ENVIRON_RANK,
};

/* discovery_parse_environ with checked options, telling a process without
 * rank variables from a rejected one. buf may be NULL only with len 0. */
enum environ_result environ_parse(const char *buf, size_t len, const struct environ_config *c,
                                  struct rank_info *out);

/* A process whose communicator creation said rank of world (the
 * collectives probe: c10d::ProcessGroup's constructor, ncclCommInitRank):
 * the rank from those, the rest (job, local rank, groups, GPU) from its
 * environment as environ_parse does. Local rank unknown: the rank (one node,
 * as torch.multiprocessing.spawn), with DISCOVERY_LOCAL_RANK_UNKNOWN.
 * Returns ENVIRON_RANK, or ENVIRON_REJECTED (rank >= world, world 0 or over
 * DISCOVERY_WORLD_MAX, a bad job variable) with out->reason. */
enum environ_result environ_parse_comm(const char *buf, size_t len, const struct environ_config *c,
                                       uint32_t rank, uint32_t world, struct rank_info *out);

#endif
