/* Rank discovery from /proc: the process table (a chained hash of every
 * process seen, keyed by pid, checked against the start time), which reads
 * each process's environ once and hands it to the parser (environ.c). See
 * agent/discovery/discovery.h for the rules. */
#include "agent/discovery/discovery.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

#define DISCOVERY_PROC_ROOT_MAX 256
#define DISCOVERY_DEPTH_MAX 16 /* ancestors followed for the descendant check */

struct discovery_config {
    char proc_root[DISCOVERY_PROC_ROOT_MAX];
    struct environ_config env; /* node and job variables */
    char deny[DISCOVERY_DENY_MAX][DISCOVERY_COMM_MAX];
    size_t ndeny;
};

enum entry_kind { ENTRY_OTHER, ENTRY_RANK, ENTRY_CHILD, ENTRY_DENIED, ENTRY_REJECTED };

struct entry {
    struct entry *next; /* hash chain */
    uint32_t pid;
    uint32_t gen; /* last scan that saw it */
    uint64_t start_time;
    uint64_t env_hash, exe_hash; /* an exec changes at least one of them */
    char comm[DISCOVERY_COMM_MAX];
    enum entry_kind kind;
    struct rank_info *ri; /* RANK and CHILD: what the environ said */
};

struct discovery {
    struct discovery_config cfg;
    struct entry **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
    uint32_t gen;
    char *envbuf; /* DISCOVERY_ENVIRON_MAX bytes */
    struct stat agent_root;
    bool agent_root_ok;
    struct discovery_stats stats;
    struct log_ratelimit warn_rl;
};

struct proc_stat {
    uint32_t ppid;
    uint64_t start_time;
    char state;
    char comm[DISCOVERY_COMM_MAX];
};

struct discovery_call {
    const struct discovery_callbacks *cb;
    void *ctx;
};

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* Read up to cap bytes of a file. Returns bytes read or -errno; a vanished
 * process reads as -ENOENT (ESRCH is folded into it). */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ESRCH ? -ENOENT : -errno;
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno == ESRCH ? -ENOENT : -errno;
            close(fd);
            return err;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return (ssize_t)got;
}

/* /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ...". comm may
 * hold spaces and ')': it ends at the last ')'. */
static int read_proc_stat(const struct discovery_config *c, uint32_t pid, struct proc_stat *st)
{
    char path[DISCOVERY_PROC_ROOT_MAX + 32], buf[1024], *end;
    snprintf(path, sizeof(path), "%s/%u/stat", c->proc_root, pid);
    ssize_t n = read_file(path, buf, sizeof(buf) - 1);
    if (n < 0)
        return (int)n;
    buf[n] = '\0';
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren || close_paren[1] != ' ')
        return -EINVAL;
    size_t clen = (size_t)(close_paren - open_paren - 1);
    clen = clen < DISCOVERY_COMM_MAX ? clen : DISCOVERY_COMM_MAX - 1;
    memcpy(st->comm, open_paren + 1, clen);
    st->comm[clen] = '\0';
    st->state = close_paren[2];
    char *p = close_paren + 3;
    for (int field = 4; field <= 22; field++) {
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno)
            return -EINVAL;
        if (field == 4)
            st->ppid = (uint32_t)v;
        if (field == 22)
            st->start_time = v;
        p = end;
    }
    return 0;
}

static struct entry **table_slot(const struct discovery *d, uint32_t pid)
{
    return &d->buckets[(pid * 2654435761u) & (d->nbuckets - 1)];
}

static struct entry *table_find(const struct discovery *d, uint32_t pid)
{
    for (struct entry *e = *table_slot(d, pid); e; e = e->next)
        if (e->pid == pid)
            return e;
    return NULL;
}

static int table_grow(struct discovery *d)
{
    size_t n = d->nbuckets * 2;
    struct entry **nb = calloc(n, sizeof(*nb));
    if (!nb)
        return -ENOMEM;
    struct entry **old = d->buckets;
    size_t oldn = d->nbuckets;
    d->buckets = nb;
    d->nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        for (struct entry *e = old[i], *next; e; e = next) {
            next = e->next;
            struct entry **slot = table_slot(d, e->pid);
            e->next = *slot;
            *slot = e;
        }
    }
    free(old);
    return 0;
}

static void entry_remove(struct discovery *d, struct entry *e, const struct discovery_call *call)
{
    struct entry **pp = table_slot(d, e->pid);
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    d->count--;
    if (e->kind == ENTRY_RANK) {
        d->stats.ranks--;
        if (call && call->cb && call->cb->on_rank_exit)
            call->cb->on_rank_exit(call->ctx, e->ri);
    }
    free(e->ri);
    free(e);
}

static struct entry *entry_add(struct discovery *d, uint32_t pid, const struct proc_stat *st)
{
    if (d->count >= d->nbuckets)
        (void)table_grow(d); /* on ENOMEM chains get longer, still correct */
    struct entry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->pid = pid;
    e->gen = d->gen;
    e->start_time = st->start_time;
    memcpy(e->comm, st->comm, sizeof(e->comm));
    struct entry **slot = table_slot(d, pid);
    e->next = *slot;
    *slot = e;
    d->count++;
    return e;
}

/* Denied by comm, or by the base name of exe: a shell script runs with its
 * own name as comm ("train.sh") but exe is still the shell. */
static bool rank_denied(const struct discovery_config *c, const struct rank_info *ri)
{
    const char *slash = strrchr(ri->exe, '/');
    const char *exe_base = slash ? slash + 1 : ri->exe;

    for (size_t i = 0; i < c->ndeny; i++)
        if (strcmp(c->deny[i], ri->comm) == 0 || strcmp(c->deny[i], exe_base) == 0)
            return true;
    return false;
}

/* Fill the process fields of a parsed rank: stat, root, exe, container. */
static void rank_fill_process(struct discovery *d, uint32_t pid, const struct proc_stat *st,
                              struct rank_info *ri)
{
    char path[DISCOVERY_PROC_ROOT_MAX + 32];
    struct stat sb;

    ri->pid = pid;
    ri->ppid = st->ppid;
    ri->start_time = st->start_time;
    memcpy(ri->comm, st->comm, sizeof(ri->comm));
    snprintf(ri->root, sizeof(ri->root), "%s/%u/root", d->cfg.proc_root, pid);
    snprintf(path, sizeof(path), "%s/%u/exe", d->cfg.proc_root, pid);
    ssize_t n = readlink(path, ri->exe, sizeof(ri->exe) - 1);
    ri->exe[n > 0 ? n : 0] = '\0';
    ri->in_container = d->agent_root_ok && stat(ri->root, &sb) == 0 &&
                       (sb.st_dev != d->agent_root.st_dev || sb.st_ino != d->agent_root.st_ino);
}

static struct entry *discovery_visit(struct discovery *d, uint32_t pid, bool force, int depth,
                                     const struct discovery_call *call);

/* Is e (a parsed rank) a descendant of a tracked rank with the same job and
 * rank? Visits the parent first so that order in /proc does not matter. */
static bool rank_is_descendant(struct discovery *d, const struct rank_info *ri, int depth,
                               const struct discovery_call *call)
{
    if (ri->ppid == 0 || ri->ppid == ri->pid || depth >= DISCOVERY_DEPTH_MAX)
        return false;
    struct entry *p = discovery_visit(d, ri->ppid, false, depth + 1, call);
    return p && p->ri && (p->kind == ENTRY_RANK || p->kind == ENTRY_CHILD) &&
           p->start_time <= ri->start_time && p->ri->rank == ri->rank &&
           strcmp(p->ri->job, ri->job) == 0;
}

/* Two live processes claiming one (job, rank) on a node: unrelated jobs
 * without a job variable sharing "default@NODE", or a stale process next to
 * its restarted rank. Both stay tracked; count and warn. O(entries), once
 * per new rank. */
static void rank_check_duplicate(struct discovery *d, const struct rank_info *ri)
{
    for (size_t i = 0; i < d->nbuckets; i++) {
        for (const struct entry *o = d->buckets[i]; o; o = o->next) {
            if (o->kind != ENTRY_RANK || o->ri->rank != ri->rank || strcmp(o->ri->job, ri->job))
                continue;
            d->stats.duplicates++;
            log_ratelimited(&d->warn_rl, LOG_LEVEL_WARN, "discovery",
                            "pid %u and pid %u both claim rank %u of job %s", o->pid, ri->pid,
                            ri->rank, ri->job);
            return;
        }
    }
}

/* Decide what e is from its environment (already read into d->envbuf). */
static void entry_classify(struct discovery *d, struct entry *e, const struct proc_stat *st,
                           size_t envlen, int depth, const struct discovery_call *call)
{
    struct rank_info ri;
    enum environ_result r = environ_parse(d->envbuf, envlen, &d->cfg.env, &ri);

    e->kind = ENTRY_OTHER;
    if (r == ENVIRON_NOT_CANDIDATE)
        return;
    rank_fill_process(d, e->pid, st, &ri);
    if (envlen == DISCOVERY_ENVIRON_MAX)
        ri.flags |= DISCOVERY_ENVIRON_TRUNCATED;
    if (r == ENVIRON_REJECTED) {
        e->kind = ENTRY_REJECTED;
        d->stats.rejected++;
        log_ratelimited(&d->warn_rl, LOG_LEVEL_WARN, "discovery", "pid %u (%s): not a rank: %s",
                        e->pid, ri.comm, ri.reason);
        return;
    }
    if (rank_denied(&d->cfg, &ri)) {
        e->kind = ENTRY_DENIED;
        d->stats.denied++;
        return;
    }
    bool child = rank_is_descendant(d, &ri, depth, call);
    e->ri = malloc(sizeof(*e->ri));
    if (!e->ri)
        return; /* ENTRY_OTHER: retried when the process execs */
    *e->ri = ri;
    if (child) {
        e->kind = ENTRY_CHILD;
        d->stats.children++;
        return;
    }
    rank_check_duplicate(d, e->ri);
    e->kind = ENTRY_RANK;
    d->stats.ranks++;
    log_debug("discovery", "rank %u of job %s: pid %u (%s)", ri.rank, ri.job, e->pid, ri.comm);
    if (call && call->cb && call->cb->on_rank_new)
        call->cb->on_rank_new(call->ctx, e->ri);
}

/* Read environ and exe of pid; returns environ length, or -errno. */
static ssize_t read_identity(struct discovery *d, uint32_t pid, uint64_t *env_hash,
                             uint64_t *exe_hash)
{
    char path[DISCOVERY_PROC_ROOT_MAX + 32], exe[DISCOVERY_PATH_MAX];

    snprintf(path, sizeof(path), "%s/%u/environ", d->cfg.proc_root, pid);
    ssize_t n = read_file(path, d->envbuf, DISCOVERY_ENVIRON_MAX);
    if (n < 0)
        return n;
    snprintf(path, sizeof(path), "%s/%u/exe", d->cfg.proc_root, pid);
    ssize_t xn = readlink(path, exe, sizeof(exe));
    *env_hash = fnv1a(d->envbuf, (size_t)n);
    *exe_hash = fnv1a(exe, xn > 0 ? (size_t)xn : 0);
    return n;
}

/* Bring pid's entry up to date and return it (NULL when the process is gone
 * or unreadable). force: it exec'd, read its environment again. */
static struct entry *discovery_visit(struct discovery *d, uint32_t pid, bool force, int depth,
                                     const struct discovery_call *call)
{
    struct entry *e = table_find(d, pid);
    struct proc_stat st;
    uint64_t env_hash, exe_hash;

    if (e && e->gen == d->gen && !force)
        return e;
    int err = read_proc_stat(&d->cfg, pid, &st);
    if (err < 0 || st.state == 'Z' || st.state == 'X') {
        d->stats.vanished += err == -ENOENT;
        if (e)
            entry_remove(d, e, call);
        return NULL;
    }
    if (e && e->start_time != st.start_time) {
        d->stats.pid_reused++;
        entry_remove(d, e, call);
        e = NULL;
    }
    if (e && !force && strcmp(e->comm, st.comm) == 0) {
        e->gen = d->gen;
        return e;
    }
    ssize_t n = read_identity(d, pid, &env_hash, &exe_hash);
    if (e && n >= 0 && e->env_hash == env_hash && e->exe_hash == exe_hash) {
        memcpy(e->comm, st.comm, sizeof(e->comm)); /* renamed, same image */
        e->gen = d->gen;
        return e;
    }
    if (e)
        entry_remove(d, e, call);
    e = entry_add(d, pid, &st);
    if (!e)
        return NULL;
    d->stats.vanished += n == -ENOENT;
    d->stats.permission += n == -EACCES || n == -EPERM;
    if (n < 0)
        return e; /* ENTRY_OTHER until it execs or its pid is reused */
    e->env_hash = env_hash, e->exe_hash = exe_hash;
    d->stats.evaluated++;
    entry_classify(d, e, &st, (size_t)n, depth, call);
    return e;
}

static int config_from_options(const struct discovery_options *o, struct discovery_config *c)
{
    static const struct discovery_options none;
    if (!o)
        o = &none;
    const char *root = o->proc_root ? o->proc_root : "/proc";

    memset(c, 0, sizeof(*c));
    if (strlen(root) >= sizeof(c->proc_root) || environ_config_init(&c->env, o) < 0)
        return -EINVAL;
    strcpy(c->proc_root, root);
    return environ_split_list(o->deny_comms ? o->deny_comms : DISCOVERY_DEFAULT_DENY,
                              &c->deny[0][0], DISCOVERY_COMM_MAX, DISCOVERY_DENY_MAX, &c->ndeny);
}

struct discovery *discovery_new(const struct discovery_options *o)
{
    struct discovery *d = calloc(1, sizeof(*d));
    int err = -ENOMEM;

    if (!d)
        goto fail;
    err = config_from_options(o, &d->cfg);
    if (err < 0)
        goto fail;
    if (!d->cfg.env.node[0] && gethostname(d->cfg.env.node, sizeof(d->cfg.env.node) - 1) < 0)
        strcpy(d->cfg.env.node, "unknown");
    err = -ENOMEM;
    d->nbuckets = 1024;
    d->buckets = calloc(d->nbuckets, sizeof(*d->buckets));
    d->envbuf = malloc(DISCOVERY_ENVIRON_MAX);
    if (!d->buckets || !d->envbuf)
        goto fail;
    d->agent_root_ok = stat("/", &d->agent_root) == 0;
    d->warn_rl.interval_ns = 60 * NSEC_PER_SEC;
    d->warn_rl.burst = 10;
    return d;
fail:
    discovery_free(d);
    errno = -err;
    return NULL;
}

void discovery_free(struct discovery *d)
{
    if (!d)
        return;
    for (size_t i = 0; d->buckets && i < d->nbuckets; i++) {
        for (struct entry *e = d->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e->ri);
            free(e);
        }
    }
    free(d->buckets);
    free(d->envbuf);
    free(d);
}

static bool parse_pid(const char *name, uint32_t *pid)
{
    uint64_t v = 0;
    if (!name[0] || strlen(name) > 10)
        return false;
    for (const char *p = name; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *pid = (uint32_t)v;
    return v > 0 && v <= UINT32_MAX;
}

int discovery_scan(struct discovery *d, const struct discovery_callbacks *cb, void *ctx)
{
    const struct discovery_call call = {cb, ctx};
    uint64_t seen = 0;
    uint32_t pid;

    DIR *dir = opendir(d->cfg.proc_root);
    if (!dir)
        return -errno;
    d->gen++;
    for (struct dirent *de; (de = readdir(dir));) {
        if (!parse_pid(de->d_name, &pid))
            continue;
        seen++;
        discovery_visit(d, pid, false, 0, &call);
    }
    closedir(dir);
    for (size_t i = 0; i < d->nbuckets; i++) {
        for (struct entry *e = d->buckets[i], *next; e; e = next) {
            next = e->next;
            if (e->gen != d->gen)
                entry_remove(d, e, &call);
        }
    }
    d->stats.scans++;
    d->stats.processes = seen;
    return (int)d->stats.ranks;
}

int discovery_check_pid(struct discovery *d, uint32_t pid, const struct discovery_callbacks *cb,
                        void *ctx)
{
    const struct discovery_call call = {cb, ctx};
    if (!d || pid == 0)
        return -EINVAL;
    struct entry *e = discovery_visit(d, pid, true, 0, &call);
    return e && e->kind == ENTRY_RANK;
}

int discovery_exit_pid(struct discovery *d, uint32_t pid, const struct discovery_callbacks *cb,
                       void *ctx)
{
    const struct discovery_call call = {cb, ctx};
    struct proc_stat st;
    struct entry *e = d ? table_find(d, pid) : NULL;

    if (!e)
        return 0;
    if (read_proc_stat(&d->cfg, pid, &st) == 0 && st.state != 'Z' && st.state != 'X' &&
        st.start_time == e->start_time)
        return 0;
    bool was_rank = e->kind == ENTRY_RANK;
    entry_remove(d, e, &call);
    return was_rank;
}

const struct rank_info *discovery_find(const struct discovery *d, uint32_t pid)
{
    const struct entry *e = d ? table_find(d, pid) : NULL;
    return e && e->kind == ENTRY_RANK ? e->ri : NULL;
}

void discovery_get_stats(const struct discovery *d, struct discovery_stats *out)
{
    *out = d->stats;
}

/* --- helpers for probes and the batcher -------------------------------------- */

int discovery_host_path(const struct rank_info *ri, const char *path, char *buf, size_t len)
{
    if (!path || path[0] != '/')
        return -EINVAL;
    int n = snprintf(buf, len, "%s%s", ri->root, path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

void discovery_fill_resource(const struct rank_info *ri, Argus__V1__Resource *r)
{
    argus__v1__resource__init(r);
    r->job = (char *)ri->job;
    r->rank = ri->rank;
    r->local_rank = ri->local_rank;
    r->world_size = ri->world_size;
    r->node = (char *)ri->node;
    r->gpu = ri->gpu;
    r->gpu_uuid = (char *)ri->gpu_uuid;
    r->pid = ri->pid;
    r->dp = ri->dp, r->tp = ri->tp, r->pp = ri->pp, r->ep = ri->ep;
    r->dp_size = ri->dp_size, r->tp_size = ri->tp_size;
    r->pp_size = ri->pp_size, r->ep_size = ri->ep_size;
}
