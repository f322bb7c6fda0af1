/* The environ parser of rank discovery: environment variables to a
 * rank_info (see agent/discovery/environ.h for the rules). Pure. */
#include "agent/discovery/environ.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DISCOVERY_CVD_MAX 4096 /* longest CUDA_VISIBLE_DEVICES considered */

/* clang-format off */
enum env_key {
    K_RANK, K_LOCAL_RANK, K_WORLD_SIZE, K_LOCAL_WORLD_SIZE, K_GROUP_RANK, K_SLURM_LOCALID,
    K_CVD, K_MASTER_ADDR, K_MASTER_PORT,
    K_SLURM_PROCID, K_SLURM_NTASKS, K_SLURM_STEP_ID,
    K_OMPI_RANK, K_OMPI_SIZE, K_OMPI_LOCAL_RANK, K_PMI_RANK, K_PMI_SIZE, K_MPI_LOCALRANKID,
    K_A_TP, K_A_DP, K_A_PP, K_A_EP, /* ARGUS_<dim>: coordinates, in enum dim order */
    K_A_TP_SIZE, K_A_DP_SIZE, K_A_PP_SIZE, K_A_EP_SIZE,
    K_TP_SIZE, K_DP_SIZE, K_PP_SIZE, K_EP_SIZE, K_RESTART,
    K_FIXED /* the job variables follow */
};

static const char *const env_names[K_FIXED] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "SLURM_LOCALID",
    "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
    "ARGUS_TP", "ARGUS_DP", "ARGUS_PP", "ARGUS_EP",
    "ARGUS_TP_SIZE", "ARGUS_DP_SIZE", "ARGUS_PP_SIZE", "ARGUS_EP_SIZE",
    "TP_SIZE", "DP_SIZE", "PP_SIZE", "EP_SIZE", "TORCHELASTIC_RESTART_COUNT",
};
/* clang-format on */

/* The launchers that give a rank without RANK, in order of precedence
 * (environ.h), with their reasons for rejecting a process. */
struct launcher {
    enum env_key rank, world, local;
    const char *name, *no_world, *bad_world, *bad_rank, *too_big;
};

static const struct launcher launchers[] = {
    {K_SLURM_PROCID, K_SLURM_NTASKS, K_SLURM_LOCALID, "SLURM_PROCID",
     "SLURM_PROCID without SLURM_NTASKS", "SLURM_NTASKS is not a number in 1..2^24",
     "SLURM_PROCID is not a number", "SLURM_PROCID >= SLURM_NTASKS"},
    {K_OMPI_RANK, K_OMPI_SIZE, K_OMPI_LOCAL_RANK, "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_RANK without OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_SIZE is not a number in 1..2^24", "OMPI_COMM_WORLD_RANK is not a number",
     "OMPI_COMM_WORLD_RANK >= OMPI_COMM_WORLD_SIZE"},
    {K_PMI_RANK, K_PMI_SIZE, K_MPI_LOCALRANKID, "PMI_RANK", "PMI_RANK without PMI_SIZE",
     "PMI_SIZE is not a number in 1..2^24", "PMI_RANK is not a number", "PMI_RANK >= PMI_SIZE"},
};
#define NLAUNCHERS (sizeof(launchers) / sizeof(launchers[0]))

enum dim { DIM_TP, DIM_DP, DIM_PP, DIM_EP, DIM_COUNT };

struct env_value {
    const char *s; /* into the environ buffer, not NUL-terminated */
    size_t len;
    bool set;
};

struct env_view {
    struct env_value v[K_FIXED + DISCOVERY_VARS_MAX];
};

static void env_match(struct env_view *ev, const struct environ_config *c, const char *name,
                      size_t nlen, const char *val, size_t vlen)
{
    for (size_t k = 0; k < K_FIXED + c->njob_vars; k++) {
        const char *want = k < K_FIXED ? env_names[k] : c->job_vars[k - K_FIXED];
        if (ev->v[k].set || strlen(want) != nlen || memcmp(want, name, nlen) != 0)
            continue;
        ev->v[k] = (struct env_value){val, vlen, true};
    }
}

static void env_split(const char *buf, size_t len, const struct environ_config *c,
                      struct env_view *ev)
{
    memset(ev, 0, sizeof(*ev));
    for (size_t i = 0; i < len;) {
        const char *entry = buf + i;
        const char *nul = memchr(entry, '\0', len - i);
        size_t elen = nul ? (size_t)(nul - entry) : len - i;
        const char *eq = memchr(entry, '=', elen);
        if (eq && eq > entry)
            env_match(ev, c, entry, (size_t)(eq - entry), eq + 1, elen - (size_t)(eq - entry) - 1);
        i += elen + 1;
    }
}

/* Strict decimal: 1..10 digits, fits in uint32. -ENOENT unset, -EINVAL bad. */
static int env_u32(const struct env_value *v, uint32_t *out)
{
    uint64_t n = 0;

    if (!v->set)
        return -ENOENT;
    if (v->len == 0 || v->len > 10)
        return -EINVAL;
    for (size_t i = 0; i < v->len; i++) {
        if (v->s[i] < '0' || v->s[i] > '9')
            return -EINVAL;
        n = n * 10 + (uint64_t)(v->s[i] - '0');
    }
    if (n > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)n;
    return 0;
}

static bool text_printable(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

static bool is_loopback(const struct env_value *a)
{
    static const char *const names[] = {"localhost", "::1", "0.0.0.0"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (a->len == strlen(names[i]) && memcmp(a->s, names[i], a->len) == 0)
            return true;
    return a->len >= 4 && memcmp(a->s, "127.", 4) == 0;
}

/* Two srun steps of one allocation are two jobs: SLURM_JOB_ID gets the
 * step, "JOBID.STEPID" as sacct writes it, when SLURM_STEP_ID is a number
 * and the result fits. */
static void job_add_slurm_step(const struct env_view *ev, const char *var, struct rank_info *out)
{
    const struct env_value *step = &ev->v[K_SLURM_STEP_ID];
    uint32_t n;
    size_t len = strlen(out->job);

    if (strcmp(var, "SLURM_JOB_ID") != 0 || env_u32(step, &n) < 0 ||
        len + 1 + step->len > DISCOVERY_JOB_MAX)
        return;
    snprintf(out->job + len, sizeof(out->job) - len, ".%u", n);
}

/* "torch-ADDR:PORT" from a rendezvous address (a loopback one is the node:
 * every single-node job would share it). False when it is unusable. */
static bool job_from_address(const struct environ_config *c, const struct env_value *addr,
                             const char *port, size_t port_len, char *job, size_t len)
{
    if (addr->len == 0 || addr->len > 64 || port_len == 0 || port_len > 5 ||
        !text_printable(addr->s, addr->len) || !text_printable(port, port_len))
        return false;
    if (is_loopback(addr))
        snprintf(job, len, "torch-%s:%.*s", c->node, (int)port_len, port);
    else
        snprintf(job, len, "torch-%.*s:%.*s", (int)addr->len, addr->s, (int)port_len, port);
    return true;
}

/* The job id; returns false (reason set) when the chosen value is unusable. */
static bool pick_job(const struct env_view *ev, const struct environ_config *c,
                     struct rank_info *out)
{
    for (size_t i = 0; i < c->njob_vars; i++) {
        const struct env_value *v = &ev->v[K_FIXED + i];
        if (!v->set || v->len == 0)
            continue;
        if (strcmp(c->job_vars[i], "TORCHELASTIC_RUN_ID") == 0 && v->len == 4 &&
            memcmp(v->s, "none", 4) == 0)
            continue;
        if (v->len > DISCOVERY_JOB_MAX || !text_printable(v->s, v->len)) {
            out->reason = "job id variable too long or not printable";
            return false;
        }
        memcpy(out->job, v->s, v->len);
        out->job[v->len] = '\0';
        snprintf(out->job_source, sizeof(out->job_source), "%s", c->job_vars[i]);
        job_add_slurm_step(ev, c->job_vars[i], out);
        return true;
    }
    const struct env_value *addr = &ev->v[K_MASTER_ADDR], *port = &ev->v[K_MASTER_PORT];
    if (addr->set && port->set &&
        job_from_address(c, addr, port->s, port->len, out->job, sizeof(out->job))) {
        snprintf(out->job_source, sizeof(out->job_source), "MASTER_ADDR");
        return true;
    }
    snprintf(out->job, sizeof(out->job), "default@%s", c->node);
    snprintf(out->job_source, sizeof(out->job_source), "default");
    return true;
}

static enum environ_result reject(struct rank_info *out, const char *why)
{
    out->reason = why;
    return ENVIRON_REJECTED;
}

/* LOCAL_RANK is not set: the first launcher's local rank that is, else 0
 * with DISCOVERY_LOCAL_RANK_UNKNOWN. */
static uint32_t launcher_local_rank(const struct env_view *ev, struct rank_info *out)
{
    uint32_t local;

    for (size_t i = 0; i < NLAUNCHERS; i++)
        if (env_u32(&ev->v[launchers[i].local], &local) == 0)
            return local;
    out->flags |= DISCOVERY_LOCAL_RANK_UNKNOWN;
    return 0;
}

/* Does the environment say the process belongs to a job (a world size, a
 * rendezvous address, a job variable) without saying its rank? */
static bool env_job_hint(const struct env_view *ev, const struct environ_config *c)
{
    if (ev->v[K_WORLD_SIZE].set || ev->v[K_MASTER_ADDR].set || ev->v[K_MASTER_PORT].set)
        return true;
    for (size_t i = 0; i < c->njob_vars; i++)
        if (ev->v[K_FIXED + i].set && ev->v[K_FIXED + i].len > 0)
            return true;
    return false;
}

/* No RANK or LOCAL_RANK: the first launcher whose rank variable is set
 * (srun only inside a step: a batch script has SLURM_PROCID too). */
static enum environ_result pick_launcher_rank(const struct env_view *ev, struct rank_info *out)
{
    uint32_t rank, world, local;

    for (size_t i = 0; i < NLAUNCHERS; i++) {
        const struct launcher *l = &launchers[i];
        int err;

        if (!ev->v[l->rank].set || (l->rank == K_SLURM_PROCID && !ev->v[K_SLURM_STEP_ID].set))
            continue;
        err = env_u32(&ev->v[l->world], &world);
        if (err == -ENOENT)
            return reject(out, l->no_world);
        if (err < 0 || world == 0 || world > DISCOVERY_WORLD_MAX)
            return reject(out, l->bad_world);
        if (env_u32(&ev->v[l->rank], &rank) < 0)
            return reject(out, l->bad_rank);
        if (rank >= world)
            return reject(out, l->too_big);
        local = launcher_local_rank(ev, out);
        if (local >= world)
            return reject(out, "local rank >= world size");
        out->rank = rank, out->local_rank = local, out->world_size = world;
        out->flags |= DISCOVERY_RANK_FROM_LAUNCHER;
        snprintf(out->rank_source, sizeof(out->rank_source), "%s", l->name);
        return ENVIRON_RANK;
    }
    out->reason = "no RANK or LOCAL_RANK";
    return ENVIRON_NOT_CANDIDATE;
}

/* rank, local_rank, world_size. */
static enum environ_result pick_rank(const struct env_view *ev, struct rank_info *out)
{
    uint32_t world, rank, local, group, lws;
    int rank_err = env_u32(&ev->v[K_RANK], &rank);
    int local_err = env_u32(&ev->v[K_LOCAL_RANK], &local);
    int lws_err = env_u32(&ev->v[K_LOCAL_WORLD_SIZE], &lws);
    int err = env_u32(&ev->v[K_WORLD_SIZE], &world);

    if (rank_err == -ENOENT && local_err == -ENOENT)
        return pick_launcher_rank(ev, out);
    if (err == -ENOENT)
        return reject(out, "RANK without WORLD_SIZE");
    if (err < 0 || world == 0 || world > DISCOVERY_WORLD_MAX)
        return reject(out, "WORLD_SIZE is not a number in 1..2^24");
    if (rank_err == -EINVAL)
        return reject(out, "RANK is not a number");
    if (local_err == -EINVAL)
        return reject(out, "LOCAL_RANK is not a number");
    if (rank_err == -ENOENT) {
        if (lws_err == 0 && env_u32(&ev->v[K_GROUP_RANK], &group) == 0) {
            if ((uint64_t)group * lws + local > UINT32_MAX)
                return reject(out, "GROUP_RANK * LOCAL_WORLD_SIZE overflows");
            rank = group * lws + local;
        } else if (lws_err == 0 && lws != world) {
            return reject(out, "LOCAL_RANK without RANK or GROUP_RANK on a multi-node job");
        } else {
            rank = local;
        }
        out->flags |= DISCOVERY_RANK_FROM_LOCAL;
    }
    if (rank >= world)
        return reject(out, "RANK >= WORLD_SIZE");
    snprintf(out->rank_source, sizeof(out->rank_source), "%s",
             rank_err == 0 ? "RANK" : "LOCAL_RANK");
    if (local_err == -ENOENT)
        local = launcher_local_rank(ev, out);
    if (local >= world)
        return reject(out, "LOCAL_RANK >= WORLD_SIZE");
    out->rank = rank;
    out->local_rank = local;
    out->world_size = world;
    return ENVIRON_RANK;
}

static void groups_drop(struct rank_info *out, const char *why)
{
    out->dp = out->tp = out->pp = out->ep = 0;
    out->dp_size = out->tp_size = out->pp_size = out->ep_size = 0;
    out->flags &= ~(uint32_t)(DISCOVERY_GROUPS_EXPLICIT | DISCOVERY_GROUPS_DERIVED);
    out->flags |= DISCOVERY_GROUPS_DROPPED;
    if (!out->note)
        out->note = why;
}

/* Sizes from ARGUS_X_SIZE or X_SIZE; completes tp/pp/ep = 1 and dp from
 * WORLD_SIZE when any of tp/dp/pp is given. Returns false (groups dropped)
 * on bad or inconsistent values; *complete says whether sizes are known. */
static bool groups_sizes(const struct env_view *ev, struct rank_info *out, uint32_t size[],
                         bool *complete)
{
    bool given[DIM_COUNT];

    for (int d = 0; d < DIM_COUNT; d++) {
        int err = env_u32(&ev->v[K_A_TP_SIZE + d], &size[d]);
        if (err == -ENOENT)
            err = env_u32(&ev->v[K_TP_SIZE + d], &size[d]);
        if (err == -EINVAL || (err == 0 && (size[d] == 0 || size[d] > out->world_size))) {
            groups_drop(out, "a parallel size is not a number in 1..WORLD_SIZE");
            return false;
        }
        given[d] = err == 0;
        if (!given[d])
            size[d] = d == DIM_DP ? 0 : 1;
    }
    *complete = given[DIM_TP] || given[DIM_DP] || given[DIM_PP];
    if (!*complete) {
        for (int d = 0; d < DIM_COUNT; d++)
            size[d] = given[d] ? size[d] : 0;
        return true;
    }
    if (!given[DIM_DP])
        size[DIM_DP] = (uint32_t)(out->world_size / ((uint64_t)size[DIM_TP] * size[DIM_PP]));
    if ((uint64_t)size[DIM_TP] * size[DIM_PP] * size[DIM_DP] != out->world_size ||
        size[DIM_DP] % size[DIM_EP] != 0) {
        groups_drop(out, "tp_size * dp_size * pp_size != WORLD_SIZE or dp_size % ep_size != 0");
        return false;
    }
    return true;
}

static void pick_groups(const struct env_view *ev, struct rank_info *out)
{
    uint32_t size[DIM_COUNT], coord[DIM_COUNT] = {0};
    bool complete;

    if (!groups_sizes(ev, out, size, &complete))
        return;
    if (complete) {
        coord[DIM_TP] = out->rank % size[DIM_TP];
        coord[DIM_DP] = (out->rank / size[DIM_TP]) % size[DIM_DP];
        coord[DIM_PP] = out->rank / (size[DIM_TP] * size[DIM_DP]);
        coord[DIM_EP] = coord[DIM_DP] % size[DIM_EP];
        out->flags |= DISCOVERY_GROUPS_DERIVED;
    }
    for (int d = 0; d < DIM_COUNT; d++) {
        uint32_t v;
        int err = env_u32(&ev->v[K_A_TP + d], &v);
        if (err == -ENOENT)
            continue;
        if (err < 0 || (size[d] && v >= size[d]) || v >= out->world_size) {
            groups_drop(out, "ARGUS_DP/TP/PP/EP is not a number below its size");
            return;
        }
        coord[d] = v;
        out->flags |= DISCOVERY_GROUPS_EXPLICIT;
    }
    out->tp = coord[DIM_TP], out->dp = coord[DIM_DP], out->pp = coord[DIM_PP];
    out->ep = coord[DIM_EP];
    out->tp_size = size[DIM_TP], out->dp_size = size[DIM_DP], out->pp_size = size[DIM_PP];
    out->ep_size = size[DIM_EP];
}

/* One CUDA_VISIBLE_DEVICES entry: 1 index, 2 UUID, 0 invalid (ends the list). */
static int cvd_entry(const char *s, size_t len)
{
    bool digits = len > 0 && len <= 5;
    for (size_t i = 0; i < len && digits; i++)
        digits = s[i] >= '0' && s[i] <= '9';
    if (digits)
        return 1;
    if (len < 5 || len >= DISCOVERY_UUID_MAX ||
        (memcmp(s, "GPU-", 4) != 0 && memcmp(s, "MIG-", 4) != 0))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        bool ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                  (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '/';
        if (!ok)
            return 0;
    }
    return 2;
}

static void pick_gpu(const struct env_view *ev, struct rank_info *out)
{
    const struct env_value *cvd = &ev->v[K_CVD];
    const char *pick = NULL;
    size_t pick_len = 0, count = 0;

    out->gpu = -1;
    if (!cvd->set) {
        if (!(out->flags & DISCOVERY_LOCAL_RANK_UNKNOWN))
            out->gpu = (int32_t)out->local_rank;
        return;
    }
    if (cvd->len > DISCOVERY_CVD_MAX) {
        out->flags |= DISCOVERY_GPU_UNKNOWN;
        return;
    }
    /* Like CUDA: the visible list ends at the first invalid entry. */
    for (size_t i = 0; i <= cvd->len;) {
        const char *comma = memchr(cvd->s + i, ',', cvd->len - i);
        size_t elen = comma ? (size_t)(comma - (cvd->s + i)) : cvd->len - i;
        if (cvd_entry(cvd->s + i, elen) == 0)
            break;
        if (count == 0 || count == out->local_rank)
            pick = cvd->s + i, pick_len = elen;
        count++;
        i += elen + 1;
    }
    if (count > 1 && (out->local_rank >= count || (out->flags & DISCOVERY_LOCAL_RANK_UNKNOWN))) {
        out->flags |= DISCOVERY_GPU_UNKNOWN;
        if (!out->note)
            out->note = "LOCAL_RANK unknown or past the CUDA_VISIBLE_DEVICES list";
        return;
    }
    if (count == 0)
        return;
    if (cvd_entry(pick, pick_len) == 1) {
        uint32_t idx = 0;
        for (size_t i = 0; i < pick_len; i++)
            idx = idx * 10 + (uint32_t)(pick[i] - '0');
        out->gpu = (int32_t)idx;
    } else {
        memcpy(out->gpu_uuid, pick, pick_len);
        out->gpu_uuid[pick_len] = '\0';
    }
}

static enum environ_result environ_finish(const struct env_view *ev, const struct environ_config *c,
                                          struct rank_info *out);

enum environ_result environ_parse(const char *buf, size_t len, const struct environ_config *c,
                                  struct rank_info *out)
{
    struct env_view ev;

    memset(out, 0, sizeof(*out));
    out->gpu = -1;
    env_split(buf, len, c, &ev);
    enum environ_result r = pick_rank(&ev, out);
    if (r == ENVIRON_NOT_CANDIDATE && env_job_hint(&ev, c))
        out->flags |= DISCOVERY_JOB_HINT;
    if (r != ENVIRON_RANK)
        return r;
    return environ_finish(&ev, c, out);
}

/* The launcher's attempt (torchelastic); a malformed count is 0 with a note. */
static void pick_restart(const struct env_view *ev, struct rank_info *out)
{
    if (env_u32(&ev->v[K_RESTART], &out->restart) == -EINVAL) {
        out->restart = 0;
        if (!out->note)
            out->note = "TORCHELASTIC_RESTART_COUNT is not a number";
    }
}

/* Job, groups, GPU, restart and node of a rank whose rank is known. */
static enum environ_result environ_finish(const struct env_view *ev, const struct environ_config *c,
                                          struct rank_info *out)
{
    if (!pick_job(ev, c, out))
        return ENVIRON_REJECTED;
    pick_restart(ev, out);
    pick_groups(ev, out);
    pick_gpu(ev, out);
    snprintf(out->node, sizeof(out->node), "%s", c->node);
    return ENVIRON_RANK;
}

enum environ_result environ_parse_comm(const char *buf, size_t len, const struct environ_config *c,
                                       uint32_t rank, uint32_t world, struct rank_info *out)
{
    struct env_view ev;
    uint32_t local;

    memset(out, 0, sizeof(*out));
    out->gpu = -1;
    env_split(buf, len, c, &ev);
    if (world == 0 || world > DISCOVERY_WORLD_MAX || rank >= world)
        return reject(out, "communicator rank or size out of range");
    out->rank = rank, out->world_size = world;
    out->flags |= DISCOVERY_RANK_FROM_COMM;
    snprintf(out->rank_source, sizeof(out->rank_source), "communicator");
    if (env_u32(&ev.v[K_LOCAL_RANK], &local) < 0)
        local = launcher_local_rank(&ev, out);
    if (out->flags & DISCOVERY_LOCAL_RANK_UNKNOWN)
        local = rank; /* torch.multiprocessing.spawn: one node, rank = local rank */
    out->local_rank = local < world ? local : 0;
    return environ_finish(&ev, c, out);
}

int environ_rendezvous_job(const struct environ_config *c, const char *host, uint16_t port,
                           char *job, size_t len)
{
    char text[8];
    struct env_value addr = {host, host ? strlen(host) : 0, true};
    int n = snprintf(text, sizeof(text), "%u", port);

    if (!host || port == 0 || !job_from_address(c, &addr, text, (size_t)n, job, len))
        return -EINVAL;
    return 0;
}

bool environ_job_from_variable(const struct rank_info *ri)
{
    return ri->job_source[0] && strcmp(ri->job_source, "MASTER_ADDR") != 0 &&
           strcmp(ri->job_source, "default") != 0;
}

int environ_split_list(const char *text, char *slots, size_t slot_len, size_t max, size_t *count)
{
    *count = 0;
    for (const char *p = text; *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == 0)
            break;
        if (n >= slot_len || *count == max)
            return -EINVAL;
        memcpy(slots + *count * slot_len, p, n);
        slots[*count * slot_len + n] = '\0';
        (*count)++;
        p += strcspn(p, ",");
    }
    return 0;
}

int environ_config_init(struct environ_config *c, const struct discovery_options *o)
{
    static const struct discovery_options none;
    if (!o)
        o = &none;
    const char *node = o->node ? o->node : "";

    memset(c, 0, sizeof(*c));
    if (strlen(node) >= sizeof(c->node) || !text_printable(node, strlen(node)))
        return -EINVAL;
    strcpy(c->node, node);
    return environ_split_list(o->job_vars ? o->job_vars : DISCOVERY_DEFAULT_JOB_VARS,
                              &c->job_vars[0][0], DISCOVERY_VAR_NAME_MAX, DISCOVERY_VARS_MAX,
                              &c->njob_vars);
}

int discovery_parse_environ(const char *buf, size_t len, const struct discovery_options *o,
                            struct rank_info *out)
{
    struct environ_config c;

    if (!out || (!buf && len > 0) || environ_config_init(&c, o) < 0)
        return -EINVAL;
    return environ_parse(buf, len, &c, out) == ENVIRON_RANK ? 1 : 0;
}
