/* The worker thread of libargus-cupti.so: takes the buffers CUPTI completed
 * (in completion order), translates their records (records.c), interns names
 * and writes spans into the shared-memory ring of the current agent
 * connection. It also owns the hello socket (connect, reconnect, control
 * messages from the agent), the sampling state and stepping aside when
 * another CUPTI client appears. It is the only thread that touches the ring,
 * the socket and the name tables, so none of them is locked. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "agent/cupti/worker.h"

#include "agent/cupti/records.h"
#include "common/name_id.h"

#define PTR_CACHE 4096u /* kernel name pointer -> id */
#define ID_TABLE 16384u /* id -> connection generation it was announced in */

struct ptr_entry {
    const char *ptr;
    uint64_t id;
    uint32_t len;
};

struct id_entry {
    uint64_t id;
    uint32_t gen;
};

struct worker {
    int sock;
    uint32_t gen; /* connection generation, 0 = never connected */
    struct cupti_ring_header *ring;
    size_t ring_bytes;
    uint64_t head;                          /* local copy, published per buffer */
    uint64_t tail_seen;                     /* last tail read from the reader */
    uint64_t drop_base[CUPTI_DROP_REASONS]; /* lib->drops when this ring began */
    uint64_t reported[CUPTI_DROP_REASONS];  /* lib->drops when the last ring ended */
    uint64_t next_connect_ns, next_probe_ns;
    uint32_t ids_used;
    /* sampling */
    struct cupti_control ctl;
    bool sampled;
    uint64_t steps, mode_t0_ns;
    struct ptr_entry ptrs[PTR_CACHE];
    struct id_entry ids[ID_TABLE];
};

static struct worker *wk;
static struct lib_state *lib; /* inject.c's, given to worker_start */
static struct worker_hooks hooks;

static uint64_t worker_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- names -------------------------------------------------------------- */

static void worker_name(const char *name, bool stable, uint64_t *id, uint32_t *len)
{
    size_t h = ((uintptr_t)name >> 3) & (PTR_CACHE - 1);
    size_t n;

    if (stable && wk->ptrs[h].ptr == name) {
        *id = wk->ptrs[h].id;
        *len = wk->ptrs[h].len;
        return;
    }
    n = strlen(name);
    *id = name_id_n(name, n);
    *len = n > CUPTI_RING_NAME_MAX ? CUPTI_RING_NAME_MAX : (uint32_t)n;
    if (stable)
        wk->ptrs[h] = (struct ptr_entry){name, *id, *len};
}

/* The slot of id in the announced table (inserted if absent). */
static struct id_entry *worker_id_slot(uint64_t id)
{
    size_t i = (size_t)(id ^ (id >> 29)) & (ID_TABLE - 1);

    if (wk->ids_used > ID_TABLE * 3 / 4) { /* full: forget, names are announced again */
        memset(wk->ids, 0, sizeof(wk->ids));
        wk->ids_used = 0;
    }
    while (wk->ids[i].id && wk->ids[i].id != id)
        i = (i + 1) & (ID_TABLE - 1);
    if (!wk->ids[i].id) {
        wk->ids[i].id = id;
        wk->ids_used++;
    }
    return &wk->ids[i];
}

/* --- ring --------------------------------------------------------------- */

static bool worker_room(uint64_t need)
{
    struct cupti_ring_header *r = wk->ring;

    if (wk->ring->slots - (wk->head - wk->tail_seen) >= need)
        return true;
    wk->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    return r->slots - (wk->head - wk->tail_seen) >= need;
}

/* Write one span (and its name first when this connection has not seen it).
 * Drops and counts when there is no agent or no room. */
static void worker_put(struct cupti_span *s, const char *name, bool stable)
{
    struct id_entry *e = NULL;
    uint32_t len = 0, need = 1;

    if (!wk->ring) {
        lib->drops[CUPTI_DROP_NO_AGENT]++;
        return;
    }
    if (name) {
        worker_name(name, stable, &s->name_id, &len);
        e = worker_id_slot(s->name_id);
        if (e->gen != wk->gen)
            need += cupti_ring_name_slots(len);
    }
    if (!worker_room(need)) {
        lib->drops[CUPTI_DROP_RING_FULL]++;
        return;
    }
    if (need > 1) {
        struct cupti_span *ns = &cupti_ring_slots(wk->ring)[wk->head & (wk->ring->slots - 1)];
        *ns = (struct cupti_span){.kind = CUPTI_SPAN_NAME, .name_id = s->name_id, .aux = len};
        cupti_ring_put_bytes(wk->ring, wk->head + 1, name, len);
        wk->head += need - 1;
        e->gen = wk->gen;
    }
    cupti_ring_slots(wk->ring)[wk->head & (wk->ring->slots - 1)] = *s;
    wk->head++;
}

/* Publish what was written, mirror the counters, ring the doorbell. */
static void worker_publish(void)
{
    struct cupti_ring_header *r = wk->ring;
    static const char bell = 'b';

    if (!r)
        return;
    for (int i = 0; i < CUPTI_DROP_REASONS; i++)
        atomic_store_explicit(&r->drops[i], lib->drops[i] - wk->drop_base[i], memory_order_relaxed);
    atomic_store_explicit(&r->records, lib->records, memory_order_relaxed);
    atomic_store_explicit(&r->step_asides, lib->step_asides, memory_order_relaxed);
    atomic_store_explicit(&r->stepped_aside, lib->stepped_aside, memory_order_relaxed);
    if (atomic_load_explicit(&r->head, memory_order_relaxed) == wk->head)
        return;
    atomic_store_explicit(&r->head, wk->head, memory_order_release);
    if (!atomic_exchange_explicit(&r->doorbell, 1, memory_order_acq_rel))
        (void)send(wk->sock, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void worker_disconnect(void)
{
    worker_publish();
    if (wk->ring) {
        /* what the agent had not read when it went is lost: reported on the
         * next ring (when the process itself exits there is none) */
        uint64_t unread = wk->head - atomic_load_explicit(&wk->ring->tail, memory_order_acquire);
        memcpy(wk->reported, lib->drops, sizeof(wk->reported)); /* what this ring told */
        lib->drops[CUPTI_DROP_NO_AGENT] += unread;
        munmap(wk->ring, wk->ring_bytes);
    }
    if (wk->sock >= 0)
        close(wk->sock);
    wk->ring = NULL;
    wk->sock = -1;
}

static int worker_new_ring(void)
{
    int fd = memfd_create("argus-cupti", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

    wk->ring_bytes = cupti_ring_bytes(lib->ring_slots);
    if (fd < 0)
        return -errno;
    /* sealed at its size: the agent can map it without fearing SIGBUS */
    if (ftruncate(fd, (off_t)wk->ring_bytes) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
        goto fail;
    wk->ring = mmap(NULL, wk->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (wk->ring == MAP_FAILED) {
        wk->ring = NULL;
        goto fail;
    }
    wk->ring->magic = CUPTI_RING_MAGIC;
    wk->ring->version = CUPTI_RING_VERSION;
    wk->ring->slots = lib->ring_slots;
    wk->ring->pid = lib->hello.pid;
    wk->head = wk->tail_seen = 0;
    return fd;
fail:
    err = -errno;
    close(fd);
    return err;
}

static int worker_send_hello(int fd)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {.iov_base = &lib->hello, .iov_len = sizeof(lib->hello)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(wk->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

/* Try the agent's socket; on success the connection has a fresh ring. */
static void worker_connect(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", lib->socket_path);
    wk->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (wk->sock < 0)
        return;
    if (connect(wk->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(wk->sock);
        wk->sock = -1;
        return;
    }
    fd = worker_new_ring();
    if (fd < 0 || worker_send_hello(fd) < 0) {
        if (fd >= 0)
            close(fd);
        if (wk->ring)
            munmap(wk->ring, wk->ring_bytes);
        wk->ring = NULL;
        close(wk->sock);
        wk->sock = -1;
        return;
    }
    close(fd);
    wk->gen++;
    /* what was dropped while the agent was away is reported on this ring */
    memcpy(wk->drop_base, wk->reported, sizeof(wk->drop_base));
}

/* --- sampling ----------------------------------------------------------- */

static void worker_apply_sampling(bool sampled)
{
    if (sampled == wk->sampled)
        return;
    wk->sampled = sampled;
    if (!lib->stepped_aside)
        hooks.set_tracing(sampled, false);
}

static void worker_time_sampling(uint64_t now)
{
    if (wk->ctl.mode != CUPTI_SAMPLE_TIME || !wk->ctl.n)
        return;
    worker_apply_sampling((now - wk->mode_t0_ns) / 1000000 % wk->ctl.n < wk->ctl.k);
}

/* A step marker began: decide sampling for it and emit the STEP span. */
static void worker_step(struct lib_record *r)
{
    struct cupti_span s = {
        .kind = CUPTI_SPAN_STEP, .start_ns = r->span.start_ns, .stream = r->span.stream};
    const char *hash = strchr(r->name, '#');

    if (strncmp(r->name, "ProfilerStep#", 13) == 0 && hash[1]) {
        s.aux = (uint32_t)strtoul(hash + 1, NULL, 10);
        s.flags |= CUPTI_SPAN_STEP_NUMBERED;
    }
    if (wk->ctl.mode == CUPTI_SAMPLE_STEPS && wk->ctl.n)
        worker_apply_sampling(wk->steps % wk->ctl.n < wk->ctl.k);
    wk->steps++;
    if (wk->sampled)
        s.flags |= CUPTI_SPAN_SAMPLED;
    worker_put(&s, NULL, false);
}

static void worker_control(void)
{
    struct cupti_control c;
    ssize_t n;

    while ((n = recv(wk->sock, &c, sizeof(c), MSG_DONTWAIT)) != 0) {
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            break;
        }
        if ((size_t)n != sizeof(c) || c.magic != CUPTI_RING_MAGIC)
            continue;
        wk->ctl = c;
        wk->steps = 0;
        wk->mode_t0_ns = worker_now();
        if (c.mode == CUPTI_SAMPLE_ALWAYS || !c.n || c.k >= c.n)
            worker_apply_sampling(true);
    }
    worker_disconnect(); /* EOF or error: agent gone */
}

/* --- buffers ------------------------------------------------------------ */

static void worker_buffer(uint8_t *buf, size_t valid)
{
    CUpti_Activity *rec = NULL;
    struct lib_record r;

    while (lib->fn.next_record(buf, valid, &rec) == CUPTI_SUCCESS) {
        lib->records++;
        if (!records_translate(rec, &r))
            continue;
        if (r.span.kind == CUPTI_SPAN_MARKER && cupti_ring_is_phase(r.name)) {
            r.span.flags |= CUPTI_SPAN_PHASE;
            if (cupti_ring_is_step(r.name))
                worker_step(&r);
        }
        worker_put(&r.span, r.name, r.name_stable);
    }
}

/* Drain every completed buffer in completion order, give them back. */
static int worker_drain(void)
{
    uint64_t ready = atomic_exchange_explicit(&lib->ready_mask, 0, memory_order_acquire);
    int order[LIB_POOL_MAX], n = 0;
    size_t dropped = 0;

    for (; ready; ready &= ready - 1)
        order[n++] = __builtin_ctzll(ready);
    for (int i = 1; i < n; i++) /* insertion sort by completion sequence */
        for (int j = i; j > 0 && lib->meta[order[j]].seq < lib->meta[order[j - 1]].seq; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        worker_buffer(lib->pool + (size_t)order[i] * lib->buf_size, lib->meta[order[i]].valid);
        atomic_fetch_or_explicit(&lib->free_mask, UINT64_C(1) << order[i], memory_order_release);
        worker_publish();
    }
    if (lib->fn.dropped(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
        lib->drops[CUPTI_DROP_NO_BUFFER] += dropped;
    return n;
}

/* --- stepping aside ----------------------------------------------------- */

static void CUPTIAPI worker_probe_cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                     const void *data)
{
}

/* Is another CUPTI client there (torch.profiler, Nsight)? It holds the one
 * subscriber slot. Stepping aside touches no CUPTI state: activity kinds are
 * process-wide and now the other client's; it has registered its own buffer
 * callbacks, so ours simply stop being used. When it leaves (its own
 * teardown disables the kinds), argus registers and enables again. */
static void worker_probe(void)
{
    CUpti_SubscriberHandle sub;
    CUptiResult r = lib->fn.subscribe(&sub, worker_probe_cb, NULL);

    if (r == CUPTI_SUCCESS) {
        lib->fn.unsubscribe(sub);
        if (lib->stepped_aside) { /* it left: come back */
            lib->stepped_aside = false;
            hooks.register_callbacks();
            hooks.set_tracing(true, true);
            if (!wk->sampled)
                hooks.set_tracing(false, false);
        }
    } else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && !lib->stepped_aside) {
        lib->stepped_aside = true;
        lib->step_asides++;
    }
}

/* --- thread ------------------------------------------------------------- */

static void worker_tick(uint64_t now)
{
    if (wk->sock < 0 && now >= wk->next_connect_ns) {
        worker_connect();
        wk->next_connect_ns = now + lib->reconnect_ns;
    }
    if (now >= wk->next_probe_ns) {
        worker_probe();
        wk->next_probe_ns = now + lib->probe_ns;
    }
    worker_time_sampling(now);
}

static void *worker_main(void *arg)
{
    struct pollfd p[2] = {{.fd = lib->wake_fd, .events = POLLIN}, {.events = POLLIN}};
    uint64_t v;

    pthread_setname_np(pthread_self(), "argus-cupti");
    while (!atomic_load(&lib->stop)) {
        uint64_t now = worker_now();
        worker_tick(now);
        atomic_store(&lib->worker_sleeping, 1);
        p[1].fd = wk->sock;
        if (!atomic_load(&lib->ready_mask))
            poll(p, 2, 20);
        atomic_store(&lib->worker_sleeping, 0);
        (void)!read(lib->wake_fd, &v, sizeof(v));
        if (wk->sock >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
            worker_control();
        p[1].revents = 0;
        worker_drain();
        worker_publish();
    }
    worker_drain();
    worker_publish();
    return NULL;
}

int worker_start(struct lib_state *state, const struct worker_hooks *h)
{
    int err;

    lib = state;
    hooks = *h;
    wk = calloc(1, sizeof(*wk));
    if (!wk)
        return -ENOMEM;
    wk->sock = -1;
    wk->sampled = true;
    worker_connect();
    wk->next_connect_ns = worker_now() + lib->reconnect_ns;
    wk->next_probe_ns = worker_now() + lib->probe_ns;
    err = pthread_create(&lib->worker, NULL, worker_main, NULL);
    if (err) {
        worker_disconnect();
        free(wk);
        wk = NULL;
        return -err;
    }
    lib->worker_running = true;
    return 0;
}

void worker_stop(void)
{
    if (!lib->worker_running)
        return;
    atomic_store(&lib->stop, 1);
    pthread_join(lib->worker, NULL);
    lib->worker_running = false;
    worker_disconnect();
}
