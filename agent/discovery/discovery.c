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

#include "agent/discovery/comm_job.h"
#include "agent/discovery/procfs.h"
#include "common/log.h"

#define DISCOVERY_PROC_ROOT_MAX PROCFS_ROOT_MAX
#define DISCOVERY_DEPTH_MAX 16  /* ancestors followed for the descendant check */
#define DISCOVERY_ENV_RETRIES 3 /* scans that re-read an empty environ */

struct discovery_config {
    char proc_root[DISCOVERY_PROC_ROOT_MAX];
    struct environ_config env; /* node and job variables */
    char deny[DISCOVERY_DENY_MAX][DISCOVERY_COMM_MAX];
    size_t ndeny;
    char watch[DISCOVERY_DENY_MAX][DISCOVERY_COMM_MAX];
    size_t nwatch;
    bool netns_own;
};

enum entry_kind {
    ENTRY_OTHER,
    ENTRY_RANK,
    ENTRY_CHILD,
    ENTRY_DENIED,
    ENTRY_REJECTED,
    ENTRY_WATCHED /* waiting for its communicator; ri holds the process fields */
};

struct entry {
    struct entry *next; /* hash chain */
    uint32_t pid, ppid;
    uint32_t gen; /* last scan that saw it */
    uint64_t start_time;
    uint64_t env_hash, exe_hash; /* an exec changes at least one of them */
    char comm[DISCOVERY_COMM_MAX];
    enum entry_kind kind;
    bool job_hint;        /* WATCHED: the environment says it is in a job */
    bool launcher;        /* a child of it became a rank by its communicator */
    bool missed;          /* WATCHED: DISCOVERY_SKIP_MISSED_INIT counted */
    uint8_t env_retries;  /* scans left to re-read an empty environ (an exec in progress) */
    struct rank_info *ri; /* RANK, CHILD, WATCHED: what the environ said */
    char *store_job;      /* WATCHED, OTHER: the job its last store names (malloc'd), or NULL */
};

struct discovery {
    struct discovery_config cfg;
    struct entry **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
    uint32_t gen;
    char *envbuf; /* DISCOVERY_ENVIRON_MAX bytes */
    struct stat agent_root, agent_netns;
    bool agent_root_ok;
    bool watching; /* discovery_set_watching */
    struct discovery_stats stats;
    struct log_ratelimit warn_rl;
};

struct discovery_call {
    const struct discovery_callbacks *cb;
    void *ctx;
};

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

static const char *const skip_names[DISCOVERY_SKIP_COUNT] = {
    "invalid_environ",
    "denied",
    "descendant",
    "environ_unreadable",
    "no_communicator_probe",
    "no_rank",
    "communicator_before_watch",
    "invalid_communicator",
};

const char *discovery_skip_name(enum discovery_skip reason)
{
    return (unsigned)reason < DISCOVERY_SKIP_COUNT ? skip_names[reason] : "unknown";
}

/* Count a skipped process and log why (once per process: callers count
 * each process once), rate-limited. */
static void discovery_skip(struct discovery *d, enum discovery_skip reason, uint32_t pid,
                           const char *comm, const char *why)
{
    d->stats.skipped[reason]++;
    log_ratelimited(&d->warn_rl, LOG_LEVEL_WARN, "discovery", "pid %u (%s) is not tracked: %s [%s]",
                    pid, comm, why, skip_names[reason]);
}

/* A watched process is watched no more: tell the agent; when it is gone
 * (exited) in a job without having become a rank or launched one, count it. */
static void watch_end(struct discovery *d, struct entry *e, const struct discovery_call *call,
                      bool gone)
{
    d->stats.watched--;
    if (call && call->cb && call->cb->on_watch)
        call->cb->on_watch(call->ctx, e->pid, e->ri->root, false);
    if (gone && e->job_hint && !e->launcher && !e->missed)
        discovery_skip(d, DISCOVERY_SKIP_NO_RANK, e->pid, e->comm,
                       "in a job but exited with no rank variable at exec and no "
                       "communicator created");
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
    if (e->kind == ENTRY_WATCHED)
        watch_end(d, e, call, true);
    free(e->store_job);
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
    e->ppid = st->ppid;
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

/* Does a comm or exe base name start with an entry of the watch list? */
static bool watch_listed(const struct discovery_config *c, const struct rank_info *ri)
{
    const char *slash = strrchr(ri->exe, '/');
    const char *exe_base = slash ? slash + 1 : ri->exe;

    for (size_t i = 0; i < c->nwatch; i++) {
        size_t n = strlen(c->watch[i]);
        if (strncmp(c->watch[i], ri->comm, n) == 0 || strncmp(c->watch[i], exe_base, n) == 0)
            return true;
    }
    return false;
}

/* Is an ancestor of ri (within DISCOVERY_DEPTH_MAX) a tracked rank or a
 * worker of one? */
static bool has_rank_ancestor(struct discovery *d, const struct rank_info *ri, int depth,
                              const struct discovery_call *call)
{
    uint32_t ppid = ri->ppid, self = ri->pid;

    for (int k = depth; k < DISCOVERY_DEPTH_MAX && ppid && ppid != self; k++) {
        struct entry *p = discovery_visit(d, ppid, false, k + 1, call);
        if (!p)
            return false;
        if (p->kind == ENTRY_RANK || p->kind == ENTRY_CHILD)
            return true;
        self = ppid;
        ppid = p->ppid;
    }
    return false;
}

/* Tracked as a rank: e->ri is set. */
static void entry_make_rank(struct discovery *d, struct entry *e, const struct discovery_call *call)
{
    rank_check_duplicate(d, e->ri);
    e->kind = ENTRY_RANK;
    d->stats.ranks++;
    log_debug("discovery", "rank %u of job %s: pid %u (%s), rank from %s, job from %s", e->ri->rank,
              e->ri->job, e->pid, e->ri->comm, e->ri->rank_source, e->ri->job_source);
    if (call && call->cb && call->cb->on_rank_new)
        call->cb->on_rank_new(call->ctx, e->ri);
}

/* Not a rank by its environment: watch it for its communicator when it is
 * in a job or on the watch list, and no worker of a rank. */
static void entry_classify_other(struct discovery *d, struct entry *e, const struct proc_stat *st,
                                 struct rank_info *ri, int depth, const struct discovery_call *call)
{
    bool hint = ri->flags & DISCOVERY_JOB_HINT;

    rank_fill_process(d, e->pid, st, ri);
    if ((!hint && !watch_listed(&d->cfg, ri)) || rank_denied(&d->cfg, ri) ||
        has_rank_ancestor(d, ri, depth, call))
        return;
    if (!d->watching) {
        if (hint)
            discovery_skip(d, DISCOVERY_SKIP_NO_WATCH, e->pid, ri->comm,
                           "in a job but no rank variable at exec, and the collectives probe "
                           "that reads it from the communicator is not running");
        return;
    }
    e->ri = malloc(sizeof(*e->ri));
    if (!e->ri)
        return;
    *e->ri = *ri;
    e->kind = ENTRY_WATCHED;
    e->job_hint = hint;
    d->stats.watched++;
    if (call && call->cb && call->cb->on_watch)
        call->cb->on_watch(call->ctx, e->pid, e->ri->root, true);
}

/* Decide what e is from its environment (already read into d->envbuf). */
static void entry_classify(struct discovery *d, struct entry *e, const struct proc_stat *st,
                           size_t envlen, int depth, const struct discovery_call *call)
{
    struct rank_info ri;
    enum environ_result r = environ_parse(d->envbuf, envlen, &d->cfg.env, &ri);

    e->kind = ENTRY_OTHER;
    if (r == ENVIRON_NOT_CANDIDATE) {
        entry_classify_other(d, e, st, &ri, depth, call);
        return;
    }
    rank_fill_process(d, e->pid, st, &ri);
    if (envlen == DISCOVERY_ENVIRON_MAX)
        ri.flags |= DISCOVERY_ENVIRON_TRUNCATED;
    if (r == ENVIRON_REJECTED) {
        e->kind = ENTRY_REJECTED;
        d->stats.rejected++;
        discovery_skip(d, DISCOVERY_SKIP_INVALID, e->pid, ri.comm, ri.reason);
        return;
    }
    if (rank_denied(&d->cfg, &ri)) {
        e->kind = ENTRY_DENIED;
        d->stats.denied++;
        d->stats.skipped[DISCOVERY_SKIP_DENIED]++; /* by design: not logged */
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
        d->stats.skipped[DISCOVERY_SKIP_DESCENDANT]++; /* by design: not logged */
        return;
    }
    entry_make_rank(d, e, call);
}

/* Read environ and exe of pid; returns environ length, or -errno. */
static ssize_t read_identity(struct discovery *d, uint32_t pid, uint64_t *env_hash,
                             uint64_t *exe_hash)
{
    char path[DISCOVERY_PROC_ROOT_MAX + 32], exe[DISCOVERY_PATH_MAX];

    snprintf(path, sizeof(path), "%s/%u/environ", d->cfg.proc_root, pid);
    ssize_t n = procfs_read_file(path, d->envbuf, DISCOVERY_ENVIRON_MAX);
    if (n < 0)
        return n;
    snprintf(path, sizeof(path), "%s/%u/exe", d->cfg.proc_root, pid);
    ssize_t xn = readlink(path, exe, sizeof(exe));
    *env_hash = procfs_hash(d->envbuf, (size_t)n);
    *exe_hash = procfs_hash(exe, xn > 0 ? (size_t)xn : 0);
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
    int err = procfs_read_stat(d->cfg.proc_root, pid, &st);
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
    if (e && !force && !e->env_retries && strcmp(e->comm, st.comm) == 0) {
        e->gen = d->gen;
        return e;
    }
    ssize_t n = read_identity(d, pid, &env_hash, &exe_hash);
    if (e && n >= 0 && e->env_hash == env_hash && e->exe_hash == exe_hash) {
        memcpy(e->comm, st.comm, sizeof(e->comm)); /* renamed, same image */
        e->gen = d->gen;
        e->env_retries -= e->env_retries > 0;
        return e;
    }
    if (e)
        entry_remove(d, e, call);
    e = entry_add(d, pid, &st);
    if (!e)
        return NULL;
    if (d->cfg.netns_own && !procfs_same_netns(d->cfg.proc_root, pid, &d->agent_netns)) {
        d->stats.other_netns++; /* another node's (discovery.netns = own): ENTRY_OTHER */
        return e;
    }
    d->stats.vanished += n == -ENOENT;
    if (n == -EACCES || n == -EPERM) {
        d->stats.permission++;
        if (d->stats.permission == 1) /* one line says it; the metric counts the rest */
            discovery_skip(d, DISCOVERY_SKIP_UNREADABLE, pid, st.comm,
                           "cannot read its environ (the agent needs CAP_SYS_PTRACE)");
        else
            d->stats.skipped[DISCOVERY_SKIP_UNREADABLE]++;
    }
    if (n < 0)
        return e; /* ENTRY_OTHER until it execs or its pid is reused */
    e->env_hash = env_hash, e->exe_hash = exe_hash;
    /* An exec sets comm and exe before the new image's environment exists:
     * a process caught in between reads an empty environ, and its comm will
     * not change again to make a scan look twice. Read it again on the next
     * scans (kernel threads have no environ at all). */
    if (n == 0 && !(st.flags & PROCFS_PF_KTHREAD))
        e->env_retries = DISCOVERY_ENV_RETRIES;
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
    c->netns_own = o->netns_own;
    if (environ_split_list(o->deny_comms ? o->deny_comms : DISCOVERY_DEFAULT_DENY, &c->deny[0][0],
                           DISCOVERY_COMM_MAX, DISCOVERY_DENY_MAX, &c->ndeny) < 0)
        return -EINVAL;
    return environ_split_list(o->watch ? o->watch : DISCOVERY_DEFAULT_WATCH, &c->watch[0][0],
                              DISCOVERY_COMM_MAX, DISCOVERY_DENY_MAX, &c->nwatch);
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
    if (d->cfg.netns_own && stat("/proc/self/ns/net", &d->agent_netns) < 0) {
        err = -errno; /* no namespace to compare with: nothing would be tracked */
        goto fail;
    }
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
            free(e->store_job);
            free(e->ri);
            free(e);
        }
    }
    free(d->buckets);
    free(d->envbuf);
    free(d);
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
        if (!procfs_parse_pid(de->d_name, &pid))
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
    if (procfs_read_stat(d->cfg.proc_root, pid, &st) == 0 && st.state != 'Z' && st.state != 'X' &&
        st.start_time == e->start_time)
        return 0;
    bool was_rank = e->kind == ENTRY_RANK;
    entry_remove(d, e, &call);
    return was_rank;
}

void discovery_set_watching(struct discovery *d, bool on)
{
    d->watching = on;
}

/* Build the rank of a watched (or unclassified) entry from its
 * communicator; false (counted and logged) when unusable. */
static bool comm_rank_info(struct discovery *d, struct entry *e, uint32_t rank, uint32_t size,
                           struct rank_info *ri)
{
    char path[DISCOVERY_PROC_ROOT_MAX + 32];
    struct proc_stat st;

    if (procfs_read_stat(d->cfg.proc_root, e->pid, &st) < 0)
        return false;
    snprintf(path, sizeof(path), "%s/%u/environ", d->cfg.proc_root, e->pid);
    ssize_t n = procfs_read_file(path, d->envbuf, DISCOVERY_ENVIRON_MAX);
    if (environ_parse_comm(d->envbuf, n > 0 ? (size_t)n : 0, &d->cfg.env, rank, size, ri) !=
        ENVIRON_RANK) {
        discovery_skip(d, DISCOVERY_SKIP_COMMUNICATOR, e->pid, st.comm, ri->reason);
        return false;
    }
    rank_fill_process(d, e->pid, &st, ri);
    comm_job_pick(d->cfg.proc_root, &d->cfg.env, e->store_job, d->envbuf, DISCOVERY_ENVIRON_MAX,
                  ri);
    return true;
}

int discovery_comm_init(struct discovery *d, uint32_t pid, uint32_t rank, uint32_t size,
                        const struct discovery_callbacks *cb, void *ctx)
{
    const struct discovery_call call = {cb, ctx};
    struct rank_info ri;

    if (!d || pid == 0)
        return -EINVAL;
    struct entry *e = discovery_visit(d, pid, false, 0, &call);
    if (!e || (e->kind != ENTRY_WATCHED && e->kind != ENTRY_OTHER))
        return 0;
    if (!comm_rank_info(d, e, rank, size, &ri)) {
        if (e->kind == ENTRY_WATCHED)
            watch_end(d, e, &call, false);
        e->kind = ENTRY_REJECTED;
        return 0;
    }
    if (e->kind == ENTRY_WATCHED)
        watch_end(d, e, &call, false);
    free(e->ri);
    e->ri = malloc(sizeof(*e->ri));
    if (!e->ri) {
        e->kind = ENTRY_OTHER;
        return 0;
    }
    *e->ri = ri;
    struct entry *parent = table_find(d, ri.ppid);
    if (parent)
        parent->launcher = true;
    entry_make_rank(d, e, &call);
    log_info("discovery", "pid %u (%s) is rank %u of %u of job %s (from %s, job from %s)", pid,
             ri.comm, rank, size, ri.job, ri.rank_source, ri.job_source);
    return 1;
}

int discovery_rendezvous(struct discovery *d, uint32_t pid, const char *host, uint16_t port)
{
    char job[DISCOVERY_JOB_MAX + 1];
    struct entry *e = d ? table_find(d, pid) : NULL;
    int err = 0;

    if (!d || pid == 0)
        return -EINVAL;
    if (!e || (e->kind != ENTRY_WATCHED && e->kind != ENTRY_OTHER))
        return 0;
    free(e->store_job);
    e->store_job = NULL;
    if (host)
        err = environ_rendezvous_job(&d->cfg.env, host, port, job, sizeof(job));
    if (host && err == 0 && !(e->store_job = strdup(job)))
        err = -ENOMEM;
    if (err < 0)
        log_ratelimited(&d->warn_rl, LOG_LEVEL_WARN, "discovery",
                        "pid %u: its store's address %.64s:%u names no job: %s", pid, host, port,
                        strerror(-err));
    return err < 0 ? err : e->store_job != NULL;
}

void discovery_unidentified_call(struct discovery *d, uint32_t pid)
{
    struct entry *e = d ? table_find(d, pid) : NULL;

    if (!e || e->kind != ENTRY_WATCHED || e->missed)
        return;
    e->missed = true;
    discovery_skip(d, DISCOVERY_SKIP_MISSED_INIT, pid, e->comm,
                   "calls collectives, but its communicator was created before the agent "
                   "watched it (set RANK/WORLD_SIZE at exec, or restart the job under the agent)");
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
