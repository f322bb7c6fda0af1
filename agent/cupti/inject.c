/* libargus-cupti.so: the CUPTI injection library loaded into every CUDA
 * process through CUDA_INJECTION64_PATH. This file holds the entry point,
 * the CUPTI function table, the buffer pool and CUPTI's two buffer callbacks;
 * worker.c turns completed buffers into spans in the shared-memory ring.
 *
 * The library never links libcupti: it dlopens it (ARGUS_CUPTI_LIB first), so
 * a process on a node without CUDA is unaffected. Nothing here fails the
 * application: every error turns GPU tracing off with one line on stderr.
 *
 * Environment: ARGUS_CUPTI_LIB, ARGUS_CUPTI_DENY (comm names, comma
 * separated), ARGUS_CUPTI_POOL (buffers, <= 64), ARGUS_CUPTI_BUFSZ (bytes),
 * ARGUS_CUPTI_RING_SLOTS (power of two), ARGUS_AGENT_SOCKET,
 * ARGUS_CUPTI_RECONNECT_MS, ARGUS_CUPTI_PROBE_MS, ARGUS_CUPTI_FLUSH_MS,
 * ARGUS_CUPTI_NVTX=0 (leave NVTX_INJECTION64_PATH alone), ARGUS_CUPTI_DISABLE=1. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "agent/cupti/lib.h"
#include "agent/cupti/worker.h"

#define ARGUS_EXPORT __attribute__((visibility("default")))

static struct lib_state lib = {.wake_fd = -1};

/* The CUPTI activity kinds argus enables (kernels, copies, sets, runtime API
 * for correlation; MARKER is enabled separately and stays on while sampling). */
static const CUpti_ActivityKind inject_traced_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
};
static const size_t inject_traced_kinds_count =
    sizeof(inject_traced_kinds) / sizeof(inject_traced_kinds[0]);

static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so",
                                          "/usr/local/cuda/lib64/libcupti.so.13",
                                          "/usr/local/cuda/lib64/libcupti.so"};

static const char default_deny[] = "torchrun,ptxas,nvcc,cicc,cc1,cc1plus,ld,ninja";

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x;

    if (!v || !*v)
        return def;
    errno = 0;
    x = strtoull(v, &end, 0);
    if (errno || *end || x < lo || x > hi)
        return def;
    return x;
}

/* True when comm is in the comma-separated list. */
static bool inject_listed(const char *list, const char *comm)
{
    size_t n = strlen(comm);

    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, comm, n) == 0)
            return true;
        p += len + (e ? 1 : 0);
    }
    return false;
}

static void inject_read_comm(char *comm, size_t len)
{
    FILE *f = fopen("/proc/self/comm", "re");

    comm[0] = '\0';
    if (f) {
        if (fgets(comm, (int)len, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
    }
}

/* Training ranks only: launchers and compile workers have no RANK/LOCAL_RANK,
 * or are named in the deny list. */
static bool inject_wanted(const char *comm)
{
    const char *deny = getenv("ARGUS_CUPTI_DENY");
    const char *off = getenv("ARGUS_CUPTI_DISABLE");

    if (off && strcmp(off, "1") == 0)
        return false;
    if (!getenv("RANK") && !getenv("LOCAL_RANK"))
        return false;
    return !inject_listed(deny ? deny : default_deny, comm);
}

static void inject_hello(const char *comm)
{
    const char *job = getenv("ARGUS_JOB");
    const char *rank = getenv("RANK"), *local = getenv("LOCAL_RANK");

    if (!job)
        job = getenv("TORCHELASTIC_RUN_ID");
    if (!job)
        job = getenv("SLURM_JOB_ID");
    lib.hello.magic = CUPTI_RING_MAGIC;
    lib.hello.version = CUPTI_RING_VERSION;
    lib.hello.pid = (uint32_t)getpid();
    lib.hello.rank = rank ? atoi(rank) : -1;
    lib.hello.local_rank = local ? atoi(local) : -1;
    lib.hello.slots = lib.ring_slots;
    snprintf(lib.hello.job, sizeof(lib.hello.job), "%s", job ? job : "");
    snprintf(lib.hello.comm, sizeof(lib.hello.comm), "%s", comm);
}

static void inject_config(void)
{
    const char *sock = getenv("ARGUS_AGENT_SOCKET");
    uint64_t slots = env_u64("ARGUS_CUPTI_RING_SLOTS", 1u << 18, 64, 1u << 26);

    lib.pool_count = (uint32_t)env_u64("ARGUS_CUPTI_POOL", 16, 1, LIB_POOL_MAX);
    lib.buf_size = (size_t)env_u64("ARGUS_CUPTI_BUFSZ", 1u << 20, 1024, 1u << 28) & ~(size_t)7;
    while (slots & (slots - 1))
        slots &= slots - 1; /* round down to a power of two */
    lib.ring_slots = (uint32_t)slots;
    lib.reconnect_ns = env_u64("ARGUS_CUPTI_RECONNECT_MS", 1000, 1, 3600000) * 1000000;
    lib.probe_ns = env_u64("ARGUS_CUPTI_PROBE_MS", 1000, 1, 3600000) * 1000000;
    snprintf(lib.socket_path, sizeof(lib.socket_path), "%s", sock ? sock : CUPTI_SOCKET_DEFAULT);
}

static void *inject_open_cupti(void)
{
    const char *path = getenv("ARGUS_CUPTI_LIB");
    void *h;

    if (path && *path)
        return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof(cupti_names) / sizeof(cupti_names[0]); i++)
        if ((h = dlopen(cupti_names[i], RTLD_NOW | RTLD_LOCAL)))
            return h;
    return NULL;
}

#define INJECT_SYM(field, sym)                                                                     \
    do {                                                                                           \
        *(void **)&lib.fn.field = dlsym(lib.cupti, sym);                                           \
        if (!lib.fn.field)                                                                         \
            return sym;                                                                            \
    } while (0)

/* Returns NULL, or the name of the first missing symbol. */
static const char *inject_resolve(void)
{
    INJECT_SYM(get_version, "cuptiGetVersion");
    INJECT_SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    INJECT_SYM(register_timestamp, "cuptiActivityRegisterTimestampCallback");
    INJECT_SYM(enable, "cuptiActivityEnable");
    INJECT_SYM(disable, "cuptiActivityDisable");
    INJECT_SYM(flush_all, "cuptiActivityFlushAll");
    INJECT_SYM(next_record, "cuptiActivityGetNextRecord");
    INJECT_SYM(dropped, "cuptiActivityGetNumDroppedRecords");
    INJECT_SYM(subscribe, "cuptiSubscribe");
    INJECT_SYM(unsubscribe, "cuptiUnsubscribe");
    *(void **)&lib.fn.flush_period = dlsym(lib.cupti, "cuptiActivityFlushPeriod");
    return NULL;
}

static uint64_t CUPTIAPI inject_timestamp(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CUPTI wants a buffer. Lock-free: take the lowest free bit. With the pool
 * empty, CUPTI gets no buffer (it drops records and counts them, which the
 * worker reads with cuptiActivityGetNumDroppedRecords). Never allocates. */
static void CUPTIAPI inject_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint64_t m = atomic_load_explicit(&lib.free_mask, memory_order_acquire);

    *max_records = 0;
    while (m) {
        uint64_t bit = m & -m;
        if (atomic_compare_exchange_weak_explicit(&lib.free_mask, &m, m & ~bit,
                                                  memory_order_acq_rel, memory_order_acquire)) {
            *buffer = lib.pool + (size_t)__builtin_ctzll(bit) * lib.buf_size;
            *size = lib.buf_size;
            return;
        }
    }
    *buffer = NULL;
    *size = 0;
    atomic_fetch_add_explicit(&lib.empty_requests, 1, memory_order_relaxed);
}

/* CUPTI hands a buffer back: mark it ready for the worker. The worker polls
 * every few ms; it is woken (one eventfd write) only when half the pool is
 * out, because waking it can get this thread preempted. Never a lock or an
 * allocation. */
static void CUPTIAPI inject_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                             size_t size, size_t valid)
{
    size_t idx;
    uint64_t one = 1;
    uint32_t free;

    if (!buffer || buffer < lib.pool || buffer >= lib.pool + lib.pool_count * lib.buf_size)
        return; /* not ours */
    idx = (size_t)(buffer - lib.pool) / lib.buf_size;
    lib.meta[idx].valid = valid;
    lib.meta[idx].seq = atomic_fetch_add_explicit(&lib.seq, 1, memory_order_relaxed);
    atomic_fetch_or_explicit(&lib.ready_mask, UINT64_C(1) << idx, memory_order_release);
    free =
        (uint32_t)__builtin_popcountll(atomic_load_explicit(&lib.free_mask, memory_order_relaxed));
    if (free <= lib.pool_count / 2 &&
        atomic_load_explicit(&lib.worker_sleeping, memory_order_acquire))
        (void)!write(lib.wake_fd, &one, sizeof(one));
}

/* Register argus's timestamp (CLOCK_MONOTONIC) and buffer callbacks with
 * CUPTI: at start, and again when coming back after another client left
 * (worker_hooks). Returns the CUPTI result. */
static CUptiResult inject_register(void)
{
    CUptiResult r = lib.fn.register_timestamp(inject_timestamp);

    if (r != CUPTI_SUCCESS)
        return r;
    return lib.fn.register_callbacks(inject_buffer_requested, inject_buffer_completed);
}

static void CUPTIAPI inject_probe_cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                     const void *data)
{
}

/* Another CUPTI client already there? Then touch nothing and wait for it. */
static bool inject_foreign_client(void)
{
    CUpti_SubscriberHandle sub;
    CUptiResult r = lib.fn.subscribe(&sub, inject_probe_cb, NULL);

    if (r == CUPTI_SUCCESS)
        lib.fn.unsubscribe(sub);
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

/* Enable (on) or disable the traced kinds; MARKER with them when all is set. */
static void inject_set_tracing(bool on, bool all)
{
    for (size_t i = 0; i < inject_traced_kinds_count; i++)
        (on ? lib.fn.enable : lib.fn.disable)(inject_traced_kinds[i]);
    if (all)
        (on ? lib.fn.enable : lib.fn.disable)(CUPTI_ACTIVITY_KIND_MARKER);
}

static int inject_pool_alloc(void)
{
    lib.pool = aligned_alloc(64, lib.pool_count * lib.buf_size);
    if (!lib.pool)
        return -ENOMEM;
    memset(lib.pool, 0, lib.pool_count * lib.buf_size); /* fault the pages in now */
    atomic_store(&lib.free_mask,
                 lib.pool_count == 64 ? UINT64_MAX : (UINT64_C(1) << lib.pool_count) - 1);
    lib.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return lib.wake_fd < 0 ? -errno : 0;
}

static void inject_atexit(void)
{
    if ((uint32_t)getpid() != lib.hello.pid)
        return; /* a forked child: the worker thread is not here, CUPTI is not ours */
    if (lib.fn.flush_all && !lib.stepped_aside)
        lib.fn.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    worker_stop();
}

/* Returns NULL or why tracing is off. */
static void inject_pool_free(void)
{
    free(lib.pool);
    lib.pool = NULL;
    if (lib.wake_fd >= 0)
        close(lib.wake_fd);
    lib.wake_fd = -1;
}

/* Returns NULL or why tracing is off (what is set up so far is undone,
 * except after the callbacks were registered: CUPTI may still hold them). */
static const char *inject_start(void)
{
    if (inject_pool_alloc() < 0) {
        inject_pool_free();
        return "no memory for the buffer pool";
    }
    if (inject_foreign_client()) {
        lib.stepped_aside = true; /* the worker comes back when it leaves */
        lib.step_asides = 1;
    } else if (inject_register() != CUPTI_SUCCESS) {
        inject_pool_free(); /* no GPU or no driver: CUPTI answers CUPTI_ERROR_UNKNOWN */
        return "CUPTI refused the timestamp or buffer callbacks (no GPU or driver?)";
    }
    if (worker_start(&lib, &(struct worker_hooks){inject_register, inject_set_tracing}) < 0)
        return "cannot start the worker thread";
    /* buffers come back at least this often, so steps and sampling switches
     * are seen in time even when few records are produced */
    if (lib.fn.flush_period)
        lib.fn.flush_period((uint32_t)env_u64("ARGUS_CUPTI_FLUSH_MS", 100, 1, 60000));
    if (!lib.stepped_aside)
        inject_set_tracing(true, true);
    atexit(inject_atexit);
    return NULL;
}

/* NVTX ranges reach CUPTI only when the NVTX library finds CUPTI through
 * NVTX_INJECTION64_PATH, which it reads at the process's first NVTX call
 * (after cuInit in a PyTorch job). Point it at the CUPTI argus loaded unless
 * the user (or Nsight) set it, or ARGUS_CUPTI_NVTX=0. */
static void inject_nvtx(void)
{
    const char *off = getenv("ARGUS_CUPTI_NVTX");
    char path[4096];
    Dl_info info;

    if ((off && strcmp(off, "0") == 0) || getenv("NVTX_INJECTION64_PATH"))
        return;
    if (dladdr(*(void **)&lib.fn.get_version, &info) && info.dli_fname &&
        realpath(info.dli_fname, path))
        setenv("NVTX_INJECTION64_PATH", path, 0);
}

/* Called by the CUDA driver at cuInit. Returns 1 (the driver ignores the
 * value); never fails the application. Safe to call twice (second is a
 * no-op). */
ARGUS_EXPORT int InitializeInjection(void);
ARGUS_EXPORT int InitializeInjection(void)
{
    static int done;
    const char *why, *sym;
    char comm[32];
    uint32_t version = 0;

    if (done++)
        return 1;
    inject_read_comm(comm, sizeof(comm));
    if (!inject_wanted(comm))
        return 1;
    inject_config();
    inject_hello(comm);
    lib.cupti = inject_open_cupti();
    if (!lib.cupti) {
        fprintf(stderr, "argus-cupti: CUPTI not found, GPU tracing off (%s)\n", dlerror());
        return 1;
    }
    if ((sym = inject_resolve())) {
        fprintf(stderr, "argus-cupti: CUPTI lacks %s, GPU tracing off\n", sym);
        return 1;
    }
    if (lib.fn.get_version(&version) == CUPTI_SUCCESS && version / 10000 != 13)
        fprintf(stderr,
                "argus-cupti: CUPTI API version %u; records are read with the CUDA 13 "
                "layout (kernel fields argus uses share the prefix)\n",
                version);
    if ((why = inject_start()))
        fprintf(stderr, "argus-cupti: %s, GPU tracing off\n", why);
    else
        inject_nvtx();
    return 1;
}
