/* The CUPTI source (see source_cupti.h): hello socket, one mapped ring per
 * traced process, spans -> agent events, NVTX ranges projected onto kernels.
 * Everything runs on the agent's main thread in dispatch(). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "agent/sources/cupti_peer.h"
#include "agent/sources/source_cupti.h"
#include "agent/sources/source_cupti_proj.h"

/* argus.v1.StepSource STEP_SOURCE_NVTX; spelled out so this file also builds
 * without the generated proto code (tests/gpu/run.sh on a bare GPU host). */
#define SRC_STEP_SOURCE_NVTX 1
#if __has_include("proto/argus.pb-c.h")
#include "proto/argus.pb-c.h"
_Static_assert(SRC_STEP_SOURCE_NVTX == ARGUS__V1__STEP_SOURCE__STEP_SOURCE_NVTX, "StepSource");
#endif

#define SPANS_PER_DISPATCH (1u << 20)

struct client {
    int fd;
    uint32_t pid, uid; /* SO_PEERCRED */
    struct cupti_hello hello;
    struct cupti_ring_header *ring;
    size_t ring_bytes;
    uint64_t drops_seen[CUPTI_DROP_REASONS];
    uint64_t asides_seen;
    struct cupti_proj *proj;
    char name[CUPTI_RING_NAME_MAX + 1];
};

struct cupti_src {
    struct source_cupti_config cfg;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int lfd, efd;
    struct event_sink sink;
    struct client **clients;
    struct source_cupti_stats st;
};

static const char *const drop_reason[CUPTI_DROP_REASONS] = {"cupti_no_buffer", "cupti_ring_full",
                                                            "cupti_no_agent"};

static void src_emit(struct cupti_src *s, const struct agent_event *ev)
{
    s->sink.event(s->sink.ctx, ev);
}

struct src_emit_ctx {
    struct cupti_src *s;
    struct client *c;
};

static void src_emit_phase(void *ctx, uint64_t name_id, uint64_t start, uint64_t dur,
                           uint32_t stream)
{
    struct src_emit_ctx *e = ctx;
    struct agent_event ev = {.kind = AGENT_EVENT_PHASE,
                             .pid = e->c->pid,
                             .flags = SOURCE_CUPTI_PHASE_GPU,
                             .ts_ns = start};

    ev.phase.name_id = name_id;
    ev.phase.duration_ns = dur;
    ev.phase.stream = stream;
    src_emit(e->s, &ev);
    e->s->st.phases++;
}

static void src_range_settle(struct cupti_src *s, struct client *c, bool all)
{
    struct src_emit_ctx e = {s, c};

    cupti_proj_settle(c->proj, all, s->cfg.phase_horizon_ns, src_emit_phase, &e);
}

/* --- spans -------------------------------------------------------------- */

static void src_span_kernel(struct cupti_src *s, struct client *c, const struct cupti_span *sp)
{
    struct agent_event ev = {.kind = AGENT_EVENT_KERNEL, .pid = c->pid, .ts_ns = sp->start_ns};

    ev.kernel.name_id = sp->name_id;
    ev.kernel.duration_ns = sp->dur_ns;
    ev.kernel.stream = sp->stream;
    ev.kernel.correlation = sp->correlation;
    ev.kernel.shape = sp->kind == CUPTI_SPAN_KERNEL ? sp->aux : 0;
    ev.kernel.kernel_kind = sp->kind == CUPTI_SPAN_KERNEL   ? AGENT_KERNEL_COMPUTE
                            : sp->kind == CUPTI_SPAN_MEMCPY ? AGENT_KERNEL_MEMCPY
                                                            : AGENT_KERNEL_MEMSET;
    src_emit(s, &ev);
    s->st.kernels++;
    cupti_proj_kernel(c->proj, sp->correlation, sp->stream, sp->start_ns,
                      sp->start_ns + sp->dur_ns);
}

static void src_span_step(struct cupti_src *s, struct client *c, const struct cupti_span *sp)
{
    struct agent_event ev = {
        .kind = AGENT_EVENT_STEP, .pid = c->pid, .tid = sp->stream, .ts_ns = sp->start_ns};

    ev.step.number = (sp->flags & CUPTI_SPAN_STEP_NUMBERED) ? sp->aux : UINT64_MAX;
    ev.step.source = SRC_STEP_SOURCE_NVTX;
    if (sp->flags & CUPTI_SPAN_SAMPLED)
        ev.flags |= SOURCE_CUPTI_STEP_SAMPLED;
    src_emit(s, &ev);
    s->st.steps++;
}

/* Handle the span at index at; returns how many slots it took. */
static uint32_t src_span(struct cupti_src *s, struct client *c, uint64_t at, uint64_t head)
{
    struct cupti_ring_header *h = c->ring;
    struct cupti_span sp = cupti_ring_slots(h)[at & (h->slots - 1)];
    uint32_t n;

    switch (sp.kind) {
    case CUPTI_SPAN_KERNEL:
    case CUPTI_SPAN_MEMCPY:
    case CUPTI_SPAN_MEMSET:
        src_span_kernel(s, c, &sp);
        break;
    case CUPTI_SPAN_API:
        cupti_proj_launch(c->proj, sp.correlation, sp.stream, sp.start_ns);
        break;
    case CUPTI_SPAN_MARKER:
        if (sp.flags & CUPTI_SPAN_PHASE)
            cupti_proj_open(c->proj, sp.aux, sp.name_id, sp.stream, sp.start_ns);
        break;
    case CUPTI_SPAN_RANGE_END:
        cupti_proj_close(c->proj, sp.aux, sp.start_ns);
        break;
    case CUPTI_SPAN_STEP:
        src_span_step(s, c, &sp);
        break;
    case CUPTI_SPAN_NAME:
        n = cupti_ring_name_slots(sp.aux > CUPTI_RING_NAME_MAX ? CUPTI_RING_NAME_MAX : sp.aux);
        if (at + n > head)
            return (uint32_t)(head - at); /* corrupt: skip the rest */
        cupti_ring_get_bytes(h, at + 1, c->name, sp.aux);
        s->sink.name(s->sink.ctx, sp.name_id, c->name);
        return n;
    default:
        break;
    }
    return 1;
}

static void src_drops(struct cupti_src *s, struct client *c)
{
    for (int i = 0; i < CUPTI_DROP_REASONS; i++) {
        uint64_t v = atomic_load_explicit(&c->ring->drops[i], memory_order_relaxed);
        struct agent_event ev = {.kind = AGENT_EVENT_DROPS, .pid = c->pid};
        if (v <= c->drops_seen[i])
            continue;
        ev.drops.count = v - c->drops_seen[i];
        ev.drops.reason = drop_reason[i];
        s->st.drops[i] += ev.drops.count;
        c->drops_seen[i] = v;
        src_emit(s, &ev);
    }
    uint64_t a = atomic_load_explicit(&c->ring->step_asides, memory_order_relaxed);
    s->st.step_asides += a - c->asides_seen;
    c->asides_seen = a;
}

/* Read everything the library published. Returns spans read. */
static int src_drain(struct cupti_src *s, struct client *c)
{
    struct cupti_ring_header *h = c->ring;
    uint64_t tail, head;
    int n = 0;

    if (!h)
        return 0;
    atomic_store_explicit(&h->doorbell, 0, memory_order_release);
    tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
    head = atomic_load_explicit(&h->head, memory_order_acquire);
    if (head - tail > h->slots)
        tail = head - h->slots; /* corrupt header: never read outside the ring */
    while (tail < head && n < (int)SPANS_PER_DISPATCH) {
        tail += src_span(s, c, tail, head);
        n++;
    }
    atomic_store_explicit(&h->tail, tail, memory_order_release);
    s->st.spans += (uint64_t)n;
    src_drops(s, c);
    src_range_settle(s, c, false);
    return n;
}

/* --- clients ------------------------------------------------------------ */

static void src_client_close(struct cupti_src *s, int idx)
{
    struct client *c = s->clients[idx];

    if (c->ring) {
        src_drain(s, c); /* what the process wrote before it went */
        src_range_settle(s, c, true);
        munmap(c->ring, c->ring_bytes);
        s->st.connected--;
    }
    epoll_ctl(s->efd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    cupti_proj_free(c->proj);
    free(c);
    s->clients[idx] = NULL;
}

static void src_send_control(struct cupti_src *s, struct client *c)
{
    struct cupti_control ctl = {CUPTI_RING_MAGIC, s->cfg.sample_mode, s->cfg.sample_k,
                                s->cfg.sample_n};

    (void)send(c->fd, &ctl, sizeof(ctl), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Map the ring of a hello. Returns 0 or -errno (the client is then closed). */
static int src_client_map(struct cupti_src *s, struct client *c, int rfd)
{
    struct stat st;
    size_t bytes = cupti_ring_bytes(c->hello.slots);

    /* the memfd must be sealed against shrinking, or the process could make
     * our reads fault (SIGBUS) */
    if (c->hello.magic != CUPTI_RING_MAGIC || c->hello.version != CUPTI_RING_VERSION ||
        !c->hello.slots || (c->hello.slots & (c->hello.slots - 1)) || c->hello.slots > (1u << 26) ||
        fstat(rfd, &st) < 0 || (size_t)st.st_size < bytes ||
        !(fcntl(rfd, F_GET_SEALS) & F_SEAL_SHRINK))
        return -EPROTO;
    c->ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
    if (c->ring == MAP_FAILED) {
        c->ring = NULL;
        return -errno;
    }
    c->ring_bytes = bytes;
    if (c->ring->magic != CUPTI_RING_MAGIC || c->ring->slots != c->hello.slots)
        return -EPROTO;
    if (!(c->proj = cupti_proj_new()))
        return -ENOMEM;
    s->st.clients++;
    s->st.connected++;
    if (s->cfg.sample_mode != CUPTI_SAMPLE_ALWAYS)
        src_send_control(s, c);
    return 0;
}

static int src_client_hello(struct cupti_src *s, struct client *c)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &c->hello, .iov_len = sizeof(c->hello)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *cm;
    ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    int rfd = -1, err;

    if (n < 0)
        return errno == EAGAIN ? 0 : -errno;
    for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(&rfd, CMSG_DATA(cm), sizeof(int));
    if (n != (ssize_t)sizeof(c->hello) || rfd < 0) {
        if (rfd >= 0)
            close(rfd);
        return n == 0 ? -ECONNRESET : -EPROTO;
    }
    char why[160];
    if (cupti_peer_check("/proc", c->pid, c->uid, c->hello.pid, why, sizeof(why)) < 0) {
        s->st.bad_peers++;
        close(rfd);
        return -EPERM;
    }
    err = src_client_map(s, c, rfd);
    close(rfd);
    return err;
}

/* Readable client socket: the hello, doorbells, or EOF. */
static int src_client_input(struct cupti_src *s, int idx)
{
    struct client *c = s->clients[idx];
    char buf[64];
    ssize_t n;
    int err;

    if (!c->ring) {
        err = src_client_hello(s, c);
        if (err < 0) {
            s->st.bad_hellos++;
            src_client_close(s, idx);
        }
        return err;
    }
    while ((n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
        ;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        src_client_close(s, idx);
    return 0;
}

static void src_accept(struct cupti_src *s)
{
    int fd;

    while ((fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        struct epoll_event ev = {.events = EPOLLIN};
        struct client *c = NULL;
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        uint32_t i;
        for (i = 0; i < s->cfg.max_clients && s->clients[i]; i++)
            ;
        /* the kernel's word for who connected (and in our pid namespace),
         * not the hello's; a peer it cannot name is not served */
        if (i == s->cfg.max_clients || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
            !(c = calloc(1, sizeof(*c)))) {
            close(fd); /* full: the library counts no_agent drops and retries */
            continue;
        }
        c->fd = fd;
        c->pid = (uint32_t)cred.pid;
        c->uid = (uint32_t)cred.uid;
        s->clients[i] = c;
        ev.data.u64 = (uint64_t)i + 1;
        epoll_ctl(s->efd, EPOLL_CTL_ADD, fd, &ev);
    }
}

/* --- source_ops --------------------------------------------------------- */

static int src_supported(char *why, size_t whylen)
{
    return 0; /* a unix socket and shared memory: always */
}

static void *src_create(const void *config, char *why, size_t whylen)
{
    struct cupti_src *s = calloc(1, sizeof(*s));
    const char *env = getenv("ARGUS_AGENT_SOCKET");

    if (!s) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    if (config)
        s->cfg = *(const struct source_cupti_config *)config;
    if (!s->cfg.max_clients)
        s->cfg.max_clients = 256;
    if (!s->cfg.phase_horizon_ns)
        s->cfg.phase_horizon_ns = 2000000000ull;
    snprintf(s->path, sizeof(s->path), "%s",
             s->cfg.socket_path ? s->cfg.socket_path
             : env              ? env
                                : CUPTI_SOCKET_DEFAULT);
    s->lfd = s->efd = -1;
    s->clients = calloc(s->cfg.max_clients, sizeof(*s->clients));
    if (!s->clients) {
        snprintf(why, whylen, "out of memory");
        free(s);
        return NULL;
    }
    return s;
}

static int src_listen(struct cupti_src *s, char *why, size_t whylen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    char dir[sizeof(s->path)], *slash;
    gid_t gid;

    if (cupti_peer_group(s->cfg.socket_group, &gid, why, whylen) < 0)
        return -ENOENT;
    snprintf(dir, sizeof(dir), "%s", s->path);
    if ((slash = strrchr(dir, '/')) && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755); /* /run/argus; exists is fine */
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
    unlink(s->path);
    s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    /* owner and group only; nobody can connect before listen() */
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        chown(s->path, (uid_t)-1, gid) < 0 || chmod(s->path, 0660) < 0 || listen(s->lfd, 128) < 0) {
        snprintf(why, whylen, "cannot listen on %s: %s", s->path, strerror(errno));
        return -errno;
    }
    s->efd = epoll_create1(EPOLL_CLOEXEC);
    if (s->efd < 0 || epoll_ctl(s->efd, EPOLL_CTL_ADD, s->lfd, &ev) < 0) {
        snprintf(why, whylen, "epoll: %s", strerror(errno));
        return -errno;
    }
    return 0;
}

static int src_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct cupti_src *s = state;

    s->sink = *sink;
    return src_listen(s, why, whylen);
}

static int src_fd(void *state)
{
    return ((struct cupti_src *)state)->efd;
}

static int src_dispatch(void *state)
{
    struct cupti_src *s = state;
    struct epoll_event evs[32];
    int n, total = 0;

    while ((n = epoll_wait(s->efd, evs, 32, 0)) > 0) {
        for (int i = 0; i < n; i++) {
            if (!evs[i].data.u64)
                src_accept(s);
            else if (s->clients[evs[i].data.u64 - 1])
                src_client_input(s, (int)evs[i].data.u64 - 1);
        }
        if (n < 32)
            break;
    }
    for (uint32_t i = 0; i < s->cfg.max_clients; i++)
        if (s->clients[i])
            total += src_drain(s, s->clients[i]);
    return total;
}

static size_t src_metrics(void *state, char *buf, size_t len)
{
    struct cupti_src *s = state;
    size_t off = 0;
    int w =
        snprintf(buf, len,
                 "argus_cupti_processes %" PRIu64 "\nargus_cupti_spans_total %" PRIu64
                 "\nargus_cupti_kernels_total %" PRIu64 "\nargus_cupti_step_asides_total %" PRIu64
                 "\nargus_cupti_rejected_peers_total %" PRIu64 "\n",
                 s->st.connected, s->st.spans, s->st.kernels, s->st.step_asides, s->st.bad_peers);

    off = w > 0 ? ((size_t)w < len ? (size_t)w : len) : 0;
    for (int i = 0; i < CUPTI_DROP_REASONS && off < len; i++) {
        w = snprintf(buf + off, len - off, "argus_cupti_drops_total{reason=\"%s\"} %" PRIu64 "\n",
                     drop_reason[i], s->st.drops[i]);
        off += w > 0 ? ((size_t)w < len - off ? (size_t)w : len - off) : 0;
    }
    return off;
}

static void src_destroy(void *state)
{
    struct cupti_src *s = state;

    if (!s)
        return;
    for (uint32_t i = 0; i < s->cfg.max_clients; i++)
        if (s->clients[i])
            src_client_close(s, (int)i);
    if (s->lfd >= 0) {
        close(s->lfd);
        unlink(s->path);
    }
    if (s->efd >= 0)
        close(s->efd);
    free(s->clients);
    free(s);
}

int source_cupti_set_sampling(void *state, uint32_t mode, uint32_t k, uint32_t n)
{
    struct cupti_src *s = state;

    if (mode > CUPTI_SAMPLE_TIME || (mode != CUPTI_SAMPLE_ALWAYS && (!n || k > n)))
        return -EINVAL;
    s->cfg.sample_mode = mode;
    s->cfg.sample_k = k;
    s->cfg.sample_n = n;
    for (uint32_t i = 0; i < s->cfg.max_clients; i++)
        if (s->clients[i] && s->clients[i]->ring)
            src_send_control(s, s->clients[i]);
    return 0;
}

void source_cupti_get_stats(void *state, struct source_cupti_stats *out)
{
    *out = ((struct cupti_src *)state)->st;
}

const struct source_ops source_cupti_ops = {
    .name = "cupti",
    .supported = src_supported,
    .create = src_create,
    .start = src_start,
    .fd = src_fd,
    .dispatch = src_dispatch,
    .track = NULL,
    .metrics = src_metrics,
    .destroy = src_destroy,
};
