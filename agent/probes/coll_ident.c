/* Communicator ids shared by members, and gloo work ends (see coll_ident.h). */
#include "agent/probes/coll_ident.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/name_id.h"

#define COLL_IDENT_THREADS 64   /* per-thread slots (tid % 64) */
#define COLL_IDENT_GROUPS 256   /* (pid, handle) -> id */
#define COLL_IDENT_WORKS 512    /* works waiting for their call or their finish */
#define COLL_IDENT_DEPTH 4      /* stores under stores read for a name */
#define COLL_IDENT_STRING 32    /* bytes of a libstdc++ std::string */
#define COLL_IDENT_PREFIX_AT 32 /* offset of PrefixStore::prefix_ */

/* The last store (or work) made on a thread. */
struct coll_ident_slot {
    uint32_t pid, tid;
    uint64_t ns;
    uint64_t work;
    char prefix[COLL_IDENT_NAME_MAX];
    bool store_used, work_used;
};

struct coll_ident_group {
    uint32_t pid;
    uint64_t handle, id;
};

/* A work bound to its call (comm, seq), or a finished one waiting for it. */
struct coll_ident_work {
    uint32_t pid;
    uint64_t work;
    uint64_t comm;
    int64_t seq;
    uint64_t done_ns; /* 0: the call came first, waiting for the finish */
    bool used;
};

struct coll_ident {
    struct coll_ident_slot slots[COLL_IDENT_THREADS];
    struct coll_ident_group groups[COLL_IDENT_GROUPS];
    size_t ngroups, next_group;
    struct coll_ident_work works[COLL_IDENT_WORKS];
    size_t next_work;
};

struct coll_ident *coll_ident_new(void)
{
    return calloc(1, sizeof(struct coll_ident));
}

void coll_ident_free(struct coll_ident *ci)
{
    free(ci);
}

uint64_t coll_ident_hash(const void *identity, size_t len, uint32_t size)
{
    uint8_t le[4] = {size & 0xff, (size >> 8) & 0xff, (size >> 16) & 0xff, size >> 24};
    uint64_t h = name_id_update(name_id_update(NAME_ID_BASIS, identity, len), le, sizeof(le));

    return h ? h : 1;
}

void coll_ident_store(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t ns,
                      const char *prefix)
{
    struct coll_ident_slot *s = &ci->slots[tid % COLL_IDENT_THREADS];
    size_t n = strlen(prefix);

    if (n >= sizeof(s->prefix))
        return;
    s->pid = pid;
    s->tid = tid;
    s->ns = ns;
    memcpy(s->prefix, prefix, n + 1);
    s->store_used = true;
    s->work_used = false;
}

uint64_t coll_ident_group(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t ns,
                          uint64_t handle, uint32_t size)
{
    struct coll_ident_slot *s = &ci->slots[tid % COLL_IDENT_THREADS];
    uint64_t id;

    if (!s->store_used || s->pid != pid || s->tid != tid || s->ns > ns)
        return 0;
    s->store_used = false;
    id = coll_ident_hash(s->prefix, strlen(s->prefix), size);
    coll_ident_bind(ci, pid, handle, id);
    return id;
}

void coll_ident_bind(struct coll_ident *ci, uint32_t pid, uint64_t handle, uint64_t id)
{
    struct coll_ident_group *g;

    for (size_t i = 0; i < ci->ngroups; i++)
        if (ci->groups[i].pid == pid && ci->groups[i].handle == handle) {
            ci->groups[i].id = id; /* a handle reused by a new group */
            return;
        }
    if (ci->ngroups < COLL_IDENT_GROUPS) {
        g = &ci->groups[ci->ngroups++];
    } else {
        g = &ci->groups[ci->next_group];
        ci->next_group = (ci->next_group + 1) % COLL_IDENT_GROUPS;
    }
    *g = (struct coll_ident_group){pid, handle, id};
}

uint64_t coll_ident_lookup(const struct coll_ident *ci, uint32_t pid, uint64_t handle)
{
    for (size_t i = 0; i < ci->ngroups; i++)
        if (ci->groups[i].pid == pid && ci->groups[i].handle == handle)
            return ci->groups[i].id;
    return 0;
}

void coll_ident_work(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t work)
{
    struct coll_ident_slot *s = &ci->slots[tid % COLL_IDENT_THREADS];

    if (s->pid != pid || s->tid != tid)
        s->store_used = false;
    s->pid = pid;
    s->tid = tid;
    s->ns = ns;
    s->work = work;
    s->work_used = true;
}

static struct coll_ident_work *coll_ident_find_work(struct coll_ident *ci, uint32_t pid,
                                                    uint64_t work)
{
    for (size_t i = 0; i < COLL_IDENT_WORKS; i++)
        if (ci->works[i].used && ci->works[i].pid == pid && ci->works[i].work == work)
            return &ci->works[i];
    return NULL;
}

static void coll_ident_keep_work(struct coll_ident *ci, const struct coll_ident_work *w)
{
    ci->works[ci->next_work] = *w;
    ci->next_work = (ci->next_work + 1) % COLL_IDENT_WORKS;
}

uint64_t coll_ident_call(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t enter_ns,
                         uint64_t exit_ns, uint64_t comm, int64_t seq)
{
    struct coll_ident_slot *s = &ci->slots[tid % COLL_IDENT_THREADS];
    struct coll_ident_work *w;
    uint64_t done;

    if (!s->work_used || s->pid != pid || s->tid != tid || s->ns < enter_ns || s->ns > exit_ns)
        return 0;
    s->work_used = false;
    w = coll_ident_find_work(ci, pid, s->work);
    if (w && w->done_ns >= enter_ns) { /* the work finished before its call was seen */
        done = w->done_ns;
        w->used = false;
        return done;
    }
    if (w)
        w->used = false; /* a stale entry of an earlier work at this address */
    coll_ident_keep_work(ci, &(struct coll_ident_work){pid, s->work, comm, seq, 0, true});
    return 0;
}

bool coll_ident_done(struct coll_ident *ci, uint32_t pid, uint64_t work, uint64_t done_ns,
                     uint64_t *comm, int64_t *seq)
{
    struct coll_ident_work *w = coll_ident_find_work(ci, pid, work);

    if (w && !w->done_ns) {
        *comm = w->comm;
        *seq = w->seq;
        w->used = false;
        return true;
    }
    if (w)
        w->used = false;
    coll_ident_keep_work(ci, &(struct coll_ident_work){pid, work, 0, -1, done_ns, true});
    return false;
}

void coll_ident_forget(struct coll_ident *ci, uint32_t pid)
{
    size_t out = 0;

    for (size_t i = 0; i < ci->ngroups; i++)
        if (ci->groups[i].pid != pid)
            ci->groups[out++] = ci->groups[i];
    ci->ngroups = out;
    ci->next_group = 0;
    for (size_t i = 0; i < COLL_IDENT_WORKS; i++)
        if (ci->works[i].pid == pid)
            ci->works[i].used = false;
    for (size_t i = 0; i < COLL_IDENT_THREADS; i++)
        if (ci->slots[i].pid == pid)
            ci->slots[i].store_used = ci->slots[i].work_used = false;
}

static bool coll_ident_printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return false;
    return true;
}

int coll_ident_parse_string(const uint8_t raw[32], uint64_t addr, char *out, size_t outlen)
{
    uint64_t ptr, len;

    memcpy(&ptr, raw, 8);
    memcpy(&len, raw + 8, 8);
    if (ptr != addr + 16 || len > 15 || len >= outlen || raw[16 + len] != 0 ||
        !coll_ident_printable((const char *)raw + 16, len))
        return -EINVAL;
    memcpy(out, raw + 16, len);
    out[len] = 0;
    return (int)len;
}

int coll_ident_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

    if (n < 0)
        return -errno;
    return n == (ssize_t)len ? 0 : -EFAULT;
}

int coll_ident_read_prefix(uint32_t pid, uint64_t addr, char *out, size_t outlen)
{
    uint8_t raw[COLL_IDENT_STRING];
    uint64_t at = addr + COLL_IDENT_PREFIX_AT;
    int err = coll_ident_read(pid, at, raw, sizeof(raw));

    return err ? err : coll_ident_parse_string(raw, at, out, outlen);
}

int coll_ident_read_name(uint32_t pid, uint64_t store, char *out, size_t outlen)
{
    char part[COLL_IDENT_NAME_MAX];
    size_t n = 0;

    if (outlen == 0)
        return -EINVAL;
    out[0] = 0;
    for (int depth = 0; depth < COLL_IDENT_DEPTH && store; depth++) {
        int len = coll_ident_read_prefix(pid, store, part, sizeof(part));

        if (len < 0 && depth == 0)
            return len;
        if (len < 0 || n + (size_t)len + 2 > outlen)
            break;
        if (depth)
            out[n++] = '/';
        memcpy(out + n, part, (size_t)len + 1);
        n += (size_t)len;
        /* store_, the intrusive_ptr<Store> after prefix_: the store under it */
        if (coll_ident_read(pid, store + COLL_IDENT_PREFIX_AT + COLL_IDENT_STRING, &store,
                            sizeof(store)) < 0)
            break;
    }
    return (int)n;
}
