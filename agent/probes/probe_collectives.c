/* The collectives probe (see probe_collectives.h). BPF side: bpf/calls.bpf.c. */
#include "agent/probes/probe_collectives.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "agent/probes/coll_ident.h"
#include "agent/probes/probe_calls.h"
#include "bpf/calls.h"
#include "common/name_id.h"

/* How a function's arguments are laid out (index into argus_call_record.args). */
enum layout {
    LAYOUT_NONE,      /* ncclGroupStart(void) */
    LAYOUT_COLL_OP,   /* send, recv, count, dtype, op, comm, stream */
    LAYOUT_COLL,      /* send, recv, count, dtype, comm, stream */
    LAYOUT_BCAST,     /* send, recv, count, dtype, root, comm, stream */
    LAYOUT_REDUCE,    /* send, recv, count, dtype, op, root, comm, stream */
    LAYOUT_P2P,       /* buf, count, dtype, peer, comm, stream */
    LAYOUT_C10D,      /* sret, this, ...: the intrusive_ptr<Work> result is returned through a
                       * hidden pointer in the first register, so `this` is the second */
    LAYOUT_WAIT,      /* c10d::Work::wait(this, timeout): ends the caller's last c10d call */
    LAYOUT_INIT_PG,   /* c10d::ProcessGroup/Backend(this, rank, size): a process group is made */
    LAYOUT_INIT_NCCL, /* ncclCommInitRank(comm *, nranks, id (128 bytes: on the stack), rank) */
    LAYOUT_TAG,       /* ProcessGroupGloo::nextTag(this): returns collectiveCounter_++ */
    LAYOUT_STORE,     /* c10d::PrefixStore(this, prefix, store): names the next group */
    LAYOUT_WORK,      /* ProcessGroupGloo::AsyncWork(this, ...): a gloo call's work */
    LAYOUT_DONE,      /* AsyncWork::finishWorkGloo(this): that work is done */
    LAYOUT_TCPSTORE,  /* c10d::TCPStore(this, std::string host, const TCPStoreOptions &): the
                       * rendezvous a process group is made over (read at entry: ARGUS_CALL_TEXT) */
    LAYOUT_FILESTORE, /* c10d::FileStore(this, path, size): a rendezvous without an address */
};

struct coll_func {
    const char *symbol;
    const char *name;
    enum layout layout;
};

#define GLOO(len, m)                                                                               \
    {                                                                                              \
        "_ZN4c10d16ProcessGroupGloo" #len #m "E*", "c10d::ProcessGroupGloo::" #m, LAYOUT_C10D      \
    }
#define PGNCCL(len, m)                                                                             \
    {                                                                                              \
        "_ZN4c10d16ProcessGroupNCCL" #len #m "E*", "c10d::ProcessGroupNCCL::" #m, LAYOUT_C10D      \
    }

static const struct coll_func coll_funcs[] = {
    {"ncclAllReduce", "ncclAllReduce", LAYOUT_COLL_OP},
    {"ncclAllGather", "ncclAllGather", LAYOUT_COLL},
    {"ncclReduceScatter", "ncclReduceScatter", LAYOUT_COLL_OP},
    {"ncclAllToAll", "ncclAllToAll", LAYOUT_COLL},
    {"ncclAlltoAll", "ncclAlltoAll", LAYOUT_COLL},
    {"ncclBroadcast", "ncclBroadcast", LAYOUT_BCAST},
    {"ncclReduce", "ncclReduce", LAYOUT_REDUCE},
    {"ncclSend", "ncclSend", LAYOUT_P2P},
    {"ncclRecv", "ncclRecv", LAYOUT_P2P},
    {"ncclGroupStart", "ncclGroupStart", LAYOUT_NONE},
    {"ncclGroupEnd", "ncclGroupEnd", LAYOUT_NONE},
    GLOO(9, allreduce),
    GLOO(19, allreduce_coalesced),
    GLOO(9, allgather),
    GLOO(15, _allgather_base),
    GLOO(19, allgather_coalesced),
    GLOO(9, broadcast),
    GLOO(14, reduce_scatter),
    GLOO(13, alltoall_base),
    GLOO(6, reduce),
    GLOO(7, barrier),
    GLOO(4, send),
    GLOO(4, recv),
    PGNCCL(9, allreduce),
    PGNCCL(19, allreduce_coalesced),
    PGNCCL(9, allgather),
    PGNCCL(15, _allgather_base),
    PGNCCL(9, broadcast),
    PGNCCL(14, reduce_scatter),
    PGNCCL(13, alltoall_base),
    PGNCCL(7, barrier),
    PGNCCL(4, send),
    PGNCCL(4, recv),
    {"_ZN4c10d4Work4waitE*", "c10d::Work::wait", LAYOUT_WAIT},
    {"_ZN4c10d16ProcessGroupGloo7nextTagEv", "c10d::ProcessGroupGloo::nextTag", LAYOUT_TAG},
    /* communicator creation: the rank of a process whose environment lacks it */
    {"_ZN4c10d12ProcessGroupC2Eii", "c10d::ProcessGroup::ProcessGroup", LAYOUT_INIT_PG},
    {"_ZN4c10d7BackendC2Eii", "c10d::Backend::Backend", LAYOUT_INIT_PG},
    {"ncclCommInitRank", "ncclCommInitRank", LAYOUT_INIT_NCCL},
    {"ncclCommInitRankConfig", "ncclCommInitRankConfig", LAYOUT_INIT_NCCL},
    /* identity of a c10d group; end of a gloo call (agent/probes/coll_ident.h) */
    {"_ZN4c10d11PrefixStoreC2E*", "c10d::PrefixStore::PrefixStore", LAYOUT_STORE},
    {"_ZN4c10d16ProcessGroupGloo9AsyncWorkC2E*", "c10d::ProcessGroupGloo::AsyncWork::AsyncWork",
     LAYOUT_WORK},
    {"_ZN4c10d16ProcessGroupGloo9AsyncWork14finishWorkGlooEv",
     "c10d::ProcessGroupGloo::AsyncWork::finishWorkGloo", LAYOUT_DONE},
    /* the store under the world group: its address names the job on every node. Only the
     * options constructor: the deprecated one delegates to it */
    {"_ZN4c10d8TCPStoreC2ENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKNS_"
     "15TCPStoreOptionsE",
     "c10d::TCPStore::TCPStore", LAYOUT_TCPSTORE},
    {"_ZN4c10d9FileStoreC2E*", "c10d::FileStore::FileStore", LAYOUT_FILESTORE},
};
#define NFUNCS (sizeof(coll_funcs) / sizeof(coll_funcs[0]))

/* Only the entry is used (the work's address, the time), once per gloo call
 * each: no uretprobe, a trap a call saved. */
static bool layout_entry_only(enum layout l)
{
    return l == LAYOUT_WORK || l == LAYOUT_DONE || l == LAYOUT_TCPSTORE || l == LAYOUT_FILESTORE;
}

/* The attach cookie of function i (bpf/calls.h bits). */
static uint64_t coll_cookie(size_t i)
{
    enum layout l = coll_funcs[i].layout;

    return i | (layout_entry_only(l) ? PROBE_UPROBE_ENTRY_ONLY : 0) |
           (l == LAYOUT_TCPSTORE ? ARGUS_CALL_TEXT : 0);
}

static const char *const coll_libs[] = {"libnccl.so", "libtorch_cpu.so", "libtorch_cuda.so", NULL};

uint32_t probe_collectives_dtype_size(uint32_t dtype)
{
    /* ncclInt8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32,
     * Float64, Bfloat16, Float8e4m3, Float8e5m2 */
    static const uint8_t size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

    return dtype < sizeof(size) ? size[dtype] : 0;
}

int probe_collectives_decode(const struct argus_call_record *r, struct probe_collectives_call *out)
{
    const struct coll_func *f;
    /* index of count, dtype, comm, stream per layout; -1 = absent */
    static const int8_t at[][4] = {
        [LAYOUT_NONE] = {-1, -1, -1, -1},    [LAYOUT_COLL_OP] = {2, 3, 5, 6},
        [LAYOUT_COLL] = {2, 3, 4, 5},        [LAYOUT_BCAST] = {2, 3, 5, 6},
        [LAYOUT_REDUCE] = {2, 3, 6, 7},      [LAYOUT_P2P] = {1, 2, 4, 5},
        [LAYOUT_C10D] = {-1, -1, 1, -1},     [LAYOUT_WAIT] = {-1, -1, -1, -1},
        [LAYOUT_INIT_PG] = {-1, -1, 0, -1},  [LAYOUT_INIT_NCCL] = {-1, -1, 0, -1},
        [LAYOUT_TAG] = {-1, -1, 0, -1},      [LAYOUT_STORE] = {-1, -1, 0, -1},
        [LAYOUT_WORK] = {-1, -1, 0, -1},     [LAYOUT_DONE] = {-1, -1, 0, -1},
        [LAYOUT_TCPSTORE] = {-1, -1, 0, -1}, [LAYOUT_FILESTORE] = {-1, -1, 0, -1},
    };
    const int8_t *ix;
    uint64_t index = r->cookie & ~ARGUS_CALL_TEXT;

    if (index >= NFUNCS)
        return -EINVAL;
    f = &coll_funcs[index];
    ix = at[f->layout];
    memset(out, 0, sizeof(*out));
    out->name = f->name;
    out->name_id = name_id(f->name);
    out->dtype = ix[1] >= 0 ? (uint32_t)r->args[ix[1]] : UINT32_MAX;
    out->count = ix[0] >= 0 ? r->args[ix[0]] : 0;
    out->comm = ix[2] >= 0 ? r->args[ix[2]] : 0;
    out->stream = ix[3] >= 0 ? r->args[ix[3]] : 0;
    out->bytes = out->count * probe_collectives_dtype_size(out->dtype);
    out->ret = r->ret;
    out->c10d = f->layout == LAYOUT_C10D;
    out->wait = f->layout == LAYOUT_WAIT;
    out->tag = f->layout == LAYOUT_TAG;
    out->lib_seq = out->tag ? (int64_t)(uint32_t)r->ret : -1;
    out->init = f->layout == LAYOUT_INIT_PG || f->layout == LAYOUT_INIT_NCCL;
    if (f->layout == LAYOUT_INIT_PG)
        out->init_rank = (uint32_t)r->args[1], out->init_size = (uint32_t)r->args[2];
    if (f->layout == LAYOUT_INIT_NCCL) { /* the unique id's first 16 bytes: its stack slots */
        out->init_rank = (uint32_t)r->args[2], out->init_size = (uint32_t)r->args[1];
        out->group = coll_ident_hash(&r->args[6], 2 * sizeof(r->args[6]), out->init_size);
    }
    out->store = f->layout == LAYOUT_STORE;
    out->work = f->layout == LAYOUT_WORK;
    out->done = f->layout == LAYOUT_DONE;
    out->rendezvous = f->layout == LAYOUT_TCPSTORE || f->layout == LAYOUT_FILESTORE;
    return 0;
}

int probe_collectives_rendezvous(const struct argus_call_text *t, char *host, size_t hostlen,
                                 uint16_t *port)
{
    size_t n = strnlen(t->text, sizeof(t->text));

    if (!(t->call.cookie & ARGUS_CALL_TEXT) || n == sizeof(t->text))
        return -EINVAL;
    if (n == 0)
        return -ENODATA; /* unreadable, or an empty host */
    if (t->len != n || n >= hostlen)
        return -ENAMETOOLONG;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t->text[i] <= 0x20 || (unsigned char)t->text[i] > 0x7e)
            return -EINVAL;
    memcpy(host, t->text, n + 1);
    *port = (uint16_t)(t->word & 0xffff); /* TCPStoreOptions.port, first (x86-64: little-endian) */
    return 0;
}

struct seq_entry {
    uint32_t pid;
    uint64_t comm, next;
};

/* A c10d call held for the on_call observer until its Work::wait returns
 * on the same thread (synchronous collectives), the thread's next call, or
 * COLL_HOLD_TICKS dispatches. */
struct coll_held {
    uint32_t pid, tid;
    uint64_t enter_ns, exit_ns, tick;
    struct probe_collectives_call call;
};

#define COLL_HELD_MAX 256
#define COLL_HOLD_TICKS 20
#define COLL_TAGS_MAX 64

/* The last gloo tag a thread took, waiting for the c10d call around it. */
struct coll_tag {
    uint32_t pid, tid;
    uint64_t enter_ns, group;
    int64_t seq; /* -1: free */
};

struct collectives {
    struct probe_collectives_config cfg;
    struct probe_calls *calls;
    const struct event_sink *sink;
    struct probe_uprobe_func funcs[NFUNCS];
    struct seq_entry *seqs;
    size_t nseqs;
    bool announced[NFUNCS];
    uint64_t decode_errors, waits_matched, inits, tick;
    struct coll_held held[COLL_HELD_MAX];
    size_t nheld;
    struct coll_tag tags[COLL_TAGS_MAX];
    uint64_t tags_matched;
    struct coll_ident *ident;
    uint64_t groups_named, ident_read_errors, works_done, rendezvous;
};

static void coll_observe(struct collectives *c, const struct coll_held *h)
{
    c->cfg.on_call(c->cfg.on_call_ctx, h->pid, h->enter_ns, h->exit_ns, &h->call);
}

/* Deliver and drop held call i. */
static void coll_release(struct collectives *c, size_t i)
{
    coll_observe(c, &c->held[i]);
    memmove(&c->held[i], &c->held[i + 1], (c->nheld - i - 1) * sizeof(c->held[0]));
    c->nheld--;
}

static ssize_t coll_find_held(struct collectives *c, uint32_t pid, uint32_t tid)
{
    for (size_t i = 0; i < c->nheld; i++)
        if (c->held[i].pid == pid && c->held[i].tid == tid)
            return (ssize_t)i;
    return -1;
}

/* Feed the observer: a wait ends the thread's held c10d call; any other
 * call releases it and is held itself (c10d) or delivered (NCCL). */
static void coll_feed_observer(struct collectives *c, const struct argus_call_record *r,
                               const struct probe_collectives_call *call)
{
    ssize_t i = coll_find_held(c, r->pid, r->tid);
    struct coll_held h = {r->pid, r->tid, r->enter_ns, r->exit_ns, c->tick, *call};

    if (call->wait) {
        if (i >= 0) {
            if (r->exit_ns > c->held[i].exit_ns)
                c->held[i].exit_ns = r->exit_ns;
            if (!c->held[i].call.done_ns) /* the wait returned: the collective is over */
                c->held[i].call.done_ns = r->exit_ns;
            c->waits_matched++;
            coll_release(c, (size_t)i);
        }
        return;
    }
    if (i >= 0)
        coll_release(c, (size_t)i);
    if (!call->c10d) {
        coll_observe(c, &h);
        return;
    }
    if (c->nheld == COLL_HELD_MAX)
        coll_release(c, 0);
    c->held[c->nheld++] = h;
}

/* Release held calls older than COLL_HOLD_TICKS dispatches (all if force). */
static void coll_flush_held(struct collectives *c, bool force)
{
    while (c->nheld && (force || c->tick - c->held[0].tick >= COLL_HOLD_TICKS))
        coll_release(c, 0);
}

/* The next sequence number of (pid, comm), starting at 0. */
static uint64_t coll_next_seq(struct collectives *c, uint32_t pid, uint64_t comm)
{
    struct seq_entry *tmp;

    for (size_t i = 0; i < c->nseqs; i++)
        if (c->seqs[i].pid == pid && c->seqs[i].comm == comm)
            return c->seqs[i].next++;
    tmp = realloc(c->seqs, (c->nseqs + 1) * sizeof(*tmp));
    if (!tmp)
        return UINT64_MAX;
    c->seqs = tmp;
    c->seqs[c->nseqs++] = (struct seq_entry){pid, comm, 1};
    return 0;
}

/* Forget the sequence counters of an untracked pid. */
static void coll_forget(struct collectives *c, uint32_t pid)
{
    size_t out = 0;

    for (size_t i = 0; i < c->nseqs; i++)
        if (c->seqs[i].pid != pid)
            c->seqs[out++] = c->seqs[i];
    c->nseqs = out;
}

/* Remember the tag a thread just took (its record comes before the one of
 * the c10d call around it, which returns later). */
static void coll_keep_tag(struct collectives *c, const struct argus_call_record *r,
                          const struct probe_collectives_call *call)
{
    struct coll_tag *slot = &c->tags[r->tid % COLL_TAGS_MAX];

    *slot = (struct coll_tag){r->pid, r->tid, r->enter_ns, call->comm, call->lib_seq};
}

/* The tag taken inside this c10d call on its thread and group, or -1. */
static int64_t coll_take_tag(struct collectives *c, const struct argus_call_record *r,
                             const struct probe_collectives_call *call)
{
    struct coll_tag *slot = &c->tags[r->tid % COLL_TAGS_MAX];
    int64_t seq = slot->seq;

    if (seq < 0 || slot->pid != r->pid || slot->tid != r->tid || slot->group != call->comm ||
        slot->enter_ns < r->enter_ns || slot->enter_ns > r->exit_ns)
        return -1;
    slot->seq = -1;
    c->tags_matched++;
    return seq;
}

/* A group's identity or a gloo work's end (coll_ident.h); no event. */
static void coll_on_ident(struct collectives *c, const struct argus_call_record *r,
                          const struct probe_collectives_call *call)
{
    char name[COLL_IDENT_NAME_MAX];
    uint64_t handle, comm;
    int64_t seq;

    if (call->store) {
        if (coll_ident_read_name(r->pid, call->comm, name, sizeof(name)) < 0)
            c->ident_read_errors++;
        else
            coll_ident_store(c->ident, r->pid, r->tid, r->enter_ns, name);
    } else if (call->work) {
        coll_ident_work(c->ident, r->pid, r->tid, r->enter_ns, call->comm);
    } else if (call->done &&
               coll_ident_done(c->ident, r->pid, call->comm, r->enter_ns, &comm, &seq)) {
        c->works_done++;
        for (size_t i = 0; i < c->nheld; i++)
            if (c->held[i].pid == r->pid && c->held[i].call.comm == comm &&
                c->held[i].call.lib_seq == seq) {
                c->held[i].call.done_ns = r->enter_ns;
                return;
            }
        if (c->cfg.on_done && seq >= 0)
            c->cfg.on_done(c->cfg.on_call_ctx, r->pid, comm, seq, r->enter_ns);
    } else if (call->init && call->group) { /* NCCL: *comm holds the new handle now */
        if (coll_ident_read(r->pid, call->comm, &handle, sizeof(handle)) < 0 || !handle)
            c->ident_read_errors++;
        else
            coll_ident_bind(c->ident, r->pid, handle, call->group), c->groups_named++;
    } else if (call->init) { /* c10d: named by the store made just before */
        c->groups_named += coll_ident_group(c->ident, r->pid, r->tid, r->enter_ns, call->comm,
                                            call->init_size) != 0;
    }
}

/* A store made: the rendezvous of the process group to come (host NULL:
 * a store without an address, or one the probe could not read). */
static void coll_on_store(struct collectives *c, const struct argus_call_record *r)
{
    char host[ARGUS_CALL_TEXT_MAX];
    uint16_t port = 0;
    bool tcp = r->cookie & ARGUS_CALL_TEXT;
    int err = tcp ? probe_collectives_rendezvous((const struct argus_call_text *)r, host,
                                                 sizeof(host), &port)
                  : -ENODATA;

    c->rendezvous++;
    c->ident_read_errors += tcp && err < 0;
    if (c->cfg.on_rendezvous)
        c->cfg.on_rendezvous(c->cfg.on_call_ctx, r->pid, err == 0 ? host : NULL, port);
}

/* Not a collective: a communicator's creation (a process learns its rank,
 * the group its id), a gloo tag, a wait, a store or a work. Returns true
 * when r was one of those (handled). */
static bool coll_on_other(struct collectives *c, const struct argus_call_record *r,
                          const struct probe_collectives_call *call)
{
    if (call->init) {
        c->inits++;
        coll_on_ident(c, r, call);
        if (c->cfg.on_comm_init)
            c->cfg.on_comm_init(c->cfg.on_call_ctx, r->pid, call->init_rank, call->init_size,
                                call->name);
    } else if (call->rendezvous) {
        coll_on_store(c, r);
    } else if (call->tag) { /* numbers the c10d call around it */
        coll_keep_tag(c, r, call);
    } else if (call->wait) { /* only ends the last c10d call */
        if (c->cfg.on_call)
            coll_feed_observer(c, r, call);
    } else if (call->store || call->work || call->done) {
        coll_on_ident(c, r, call);
    } else {
        return false;
    }
    return true;
}

static int coll_on_record(void *owner, const struct argus_call_record *r)
{
    struct collectives *c = owner;
    struct probe_collectives_call call;
    struct agent_event ev = {.kind = AGENT_EVENT_COLLECTIVE};

    if (probe_collectives_decode(r, &call) < 0) {
        c->decode_errors++;
        return 0;
    }
    if (coll_on_other(c, r, &call))
        return 0;
    if (call.c10d) {
        call.lib_seq = coll_take_tag(c, r, &call);
        call.done_ns = coll_ident_call(c->ident, r->pid, r->tid, r->enter_ns, r->exit_ns, call.comm,
                                       call.lib_seq);
        c->works_done += call.done_ns != 0;
    }
    call.group = coll_ident_lookup(c->ident, r->pid, call.comm);
    if (!c->announced[r->cookie & ~ARGUS_CALL_TEXT]) {
        c->sink->name(c->sink->ctx, call.name_id, call.name);
        c->announced[r->cookie & ~ARGUS_CALL_TEXT] = true;
    }
    ev.pid = r->pid;
    ev.tid = r->tid;
    ev.ts_ns = r->enter_ns;
    ev.flags = call.lib_seq >= 0 ? AGENT_EVENT_FLAG_SEQ_SHARED : 0;
    ev.collective.name_id = call.name_id;
    ev.collective.seq =
        call.lib_seq >= 0 ? (uint64_t)call.lib_seq : coll_next_seq(c, r->pid, call.comm);
    ev.collective.bytes = call.bytes;
    ev.collective.comm_id = call.group;
    ev.collective.host_return_ns = call.done_ns;
    ev.collective.stream = (uint32_t)call.stream;
    c->sink->event(c->sink->ctx, &ev);
    if (c->cfg.on_call)
        coll_feed_observer(c, r, &call);
    return 1;
}

static int coll_supported(char *why, size_t whylen)
{
    return probe_uprobe_supported(why, whylen);
}

static void coll_destroy(void *state);

static void *coll_create(const void *config, char *why, size_t whylen)
{
    struct collectives *c = calloc(1, sizeof(*c));
    struct probe_calls_spec spec = {.probe = "collectives",
                                    .nfuncs = NFUNCS,
                                    .libs = coll_libs,
                                    .on_record = coll_on_record,
                                    .drop_reason = "collectives_ring_full"};

    if (!c)
        goto fail;
    if (config)
        c->cfg = *(const struct probe_collectives_config *)config;
    c->ident = coll_ident_new();
    if (!c->ident)
        goto fail;
    for (size_t i = 0; i < NFUNCS; i++)
        c->funcs[i] = (struct probe_uprobe_func){coll_funcs[i].symbol, coll_cookie(i)};
    spec.funcs = c->funcs;
    spec.all_processes = c->cfg.all_processes;
    spec.files = c->cfg.files;
    spec.owner = c;
    c->calls = probe_calls_new(&spec);
    if (c->calls)
        return c;
fail:
    coll_destroy(c);
    snprintf(why, whylen, "out of memory");
    return NULL;
}

static int coll_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct collectives *c = state;

    c->sink = sink;
    return probe_calls_start(c->calls, sink, why, whylen);
}

static int coll_fd(void *state)
{
    struct collectives *c = state;

    return probe_calls_fd(c->calls);
}

static int coll_dispatch(void *state)
{
    struct collectives *c = state;
    int n = probe_calls_dispatch(c->calls);

    c->tick++;
    if (c->cfg.on_call)
        coll_flush_held(c, false);
    return n;
}

static int coll_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct collectives *c = state;

    if (!add) {
        coll_forget(c, pid);
        coll_ident_forget(c->ident, pid);
    }
    return probe_calls_track(c->calls, pid, root, add);
}

static size_t coll_metrics(void *state, char *buf, size_t len)
{
    struct collectives *c = state;
    size_t n = probe_calls_metrics(c->calls, buf, len);

    n += probe_metric(buf + n, len - n, "collectives", "waits_matched_total", c->waits_matched);
    n += probe_metric(buf + n, len - n, "collectives", "tags_matched_total", c->tags_matched);
    n += probe_metric(buf + n, len - n, "collectives", "communicator_inits_total", c->inits);
    n +=
        probe_metric(buf + n, len - n, "collectives", "communicators_named_total", c->groups_named);
    n += probe_metric(buf + n, len - n, "collectives", "works_done_total", c->works_done);
    n += probe_metric(buf + n, len - n, "collectives", "stores_total", c->rendezvous);
    n += probe_metric(buf + n, len - n, "collectives", "memory_read_errors_total",
                      c->ident_read_errors);
    return n +
           probe_metric(buf + n, len - n, "collectives", "decode_errors_total", c->decode_errors);
}

static void coll_destroy(void *state)
{
    struct collectives *c = state;

    if (!c)
        return;
    if (c->cfg.on_call)
        coll_flush_held(c, true);
    probe_calls_free(c->calls);
    coll_ident_free(c->ident);
    free(c->seqs);
    free(c);
}

const struct source_ops probe_collectives_ops = {
    .name = "collectives",
    .supported = coll_supported,
    .create = coll_create,
    .start = coll_start,
    .fd = coll_fd,
    .dispatch = coll_dispatch,
    .track = coll_track,
    .metrics = coll_metrics,
    .destroy = coll_destroy,
};
