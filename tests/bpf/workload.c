/* Test workload for the probe integration scripts (tests/integration/bpf_*.sh).
 *
 *   workload MODE [ARG]    waits for the file $ARGUS_GO (if set) to exist, then:
 *   calls         NCCL/CUDA calls into the stand-in libraries it links
 *   realnccl PATH dlopen the real libnccl.so.2 and call its entry points
 *   sleep MS      a new thread runs 5 ms, sleeps MS, runs 5 ms
 *   threads N     N threads one after the other, each sleeping 20 ms
 *   busy MS       spin in workload_busy_function for MS
 *   compete MS    two threads on one CPU spin MS each, waiting for it in turn
 *   marker LIB N  dlopen libargus-marker.so, N steps of forward/backward phases
 *   bench N       N calls of ncclAllReduce (cost of an entry+return uprobe)
 *   benchsync N   N calls of cudaMalloc(16) + free (entry+return uprobe)
 *   benchmarker N N calls of argus_step ($ARGUS_MARKER_LIB; entry uprobe)
 *   pingpong N    N round trips between two threads over pipes (2N switches)
 *   spin MS       MS of pure computation, timed (stack sampling cost)
 *   forkexec N    N fork+exec of /bin/true (proc probe cost)
 *   io MB         write MB MiB with O_DIRECT to $ARGUS_IO_FILE, fdatasync
 *   synretrans    connect 4 clients to a listener with a full accept queue:
 *                 the kernel drops their SYNs and retransmits them (1 s)
 *   train STEPS   training-like steps: argus_step when $ARGUS_MARKER_LIB is
 *                 set, 2 ms of CPU work ($TRAIN_COMPUTE_ITERS iterations,
 *                 else calibrated before the wait), 6 ncclAllReduce, a
 *                 cudaStreamSynchronize waiting $FAKE_SYNC_US; starts
 *                 $TRAIN_START_DELAY_US after the go (to stagger ranks that
 *                 share a core); prints the mean, median and 10th
 *                 percentile step time, the mean thread CPU time of a step
 *                 (all of it, the compute, the rest) and its wait for a CPU
 *                 (run-queue delay), after 5 warm-up steps
 *
 * Each mode prints what it did as "did ..." lines (monotonic ns, tids), which
 * the scripts compare with the events the probes report. Built with
 * -fno-omit-frame-pointer so user stacks are complete. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/wait.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;
int ncclAllReduce(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
int ncclAllGather(const void *, void *, size_t, int, ncclComm_t, cudaStream_t);
int ncclReduceScatter(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
int ncclReduce(const void *, void *, size_t, int, int, int, ncclComm_t, cudaStream_t);
int ncclSend(const void *, size_t, int, int, ncclComm_t, cudaStream_t);
int ncclRecv(void *, size_t, int, int, ncclComm_t, cudaStream_t);
int ncclBroadcast(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
int ncclGroupStart(void);
int ncclGroupEnd(void);
typedef struct {
    char internal[128];
} ncclUniqueId;
int ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
int cudaStreamSynchronize(cudaStream_t);
int cudaDeviceSynchronize(void);
int cuCtxSynchronize(void);
int cudaMalloc(void **, size_t);

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static void wait_go(void)
{
    const char *go = getenv("ARGUS_GO");

    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    while (go && access(go, F_OK) != 0)
        usleep(2000);
}

static void spin_ns(uint64_t ns)
{
    uint64_t end = now_ns() + ns;

    while (now_ns() < end)
        __asm__ volatile("" ::: "memory");
}

#define COMM ((ncclComm_t)0xc0ffee)
#define STREAM ((cudaStream_t)0x5555)

/* Wait (up to 30 s) until the file $ARGUS_SEEN holds text: the probe
 * driver's output, once it dispatched what came before. */
static void wait_seen(const char *text)
{
    const char *path = getenv("ARGUS_SEEN");
    char buf[65536];

    for (int i = 0; path && i < 3000; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

        if (f)
            fclose(f);
        buf[n] = 0;
        if (strstr(buf, text))
            return;
        usleep(10000);
    }
}

/* ncclCommInitRank with an id of bytes 7i + 1: the probe reads the new
 * communicator from the process when it dispatches the call, so wait for
 * that (a call after it seen) before going on or exiting. */
static void calls_init_comm(void)
{
    static ncclComm_t comm;
    ncclUniqueId id;

    for (int i = 0; i < 128; i++)
        id.internal[i] = (char)(7 * i + 1);
    ncclCommInitRank(&comm, 4, id, 1);
    ncclGroupStart();
    printf("did ncclCommInitRank nranks=4 rank=1 comm=%p\n", (void *)comm);
    fflush(stdout);
    wait_seen("name=ncclGroupStart");
}

static int mode_calls(void)
{
    static float buf[4096];
    void *dev = NULL;
    uint64_t t0, t1;

    calls_init_comm();

    for (int i = 0; i < 3; i++) {
        t0 = now_ns();
        ncclAllReduce(buf, buf, 1024, 7 /* float32 */, 0, COMM, STREAM);
        printf(
            "did ncclAllReduce seq=%d count=1024 bytes=4096 comm=0xc0ffee stream=0x5555 ts=%" PRIu64
            "\n",
            i, t0);
    }
    ncclAllGather(buf, buf, 256, 4 /* int64 */, COMM, STREAM);
    printf("did ncclAllGather seq=3 bytes=2048 comm=0xc0ffee\n");
    ncclReduceScatter(buf, buf, 100, 6 /* float16 */, 0, COMM, STREAM);
    printf("did ncclReduceScatter seq=4 bytes=200 comm=0xc0ffee\n");
    ncclReduce(buf, buf, 10, 8 /* float64 */, 0, 0, COMM, STREAM);
    printf("did ncclReduce seq=5 bytes=80 comm=0xc0ffee stream=0x5555\n");
    ncclGroupStart();
    ncclSend(buf, 64, 2 /* int32 */, 1, COMM, STREAM);
    ncclRecv(buf, 32, 0 /* int8 */, 1, COMM, STREAM);
    ncclGroupEnd();
    printf("did ncclSend seq=6 bytes=256 comm=0xc0ffee\ndid ncclRecv seq=7 bytes=32\n");
    t0 = now_ns();
    cudaStreamSynchronize(STREAM);
    t1 = now_ns();
    printf("did cudaStreamSynchronize wait_ns=%" PRIu64 "\n", t1 - t0);
    t0 = now_ns();
    cudaDeviceSynchronize();
    t1 = now_ns();
    printf("did cudaDeviceSynchronize wait_ns=%" PRIu64 "\n", t1 - t0);
    t0 = now_ns();
    cuCtxSynchronize();
    t1 = now_ns();
    printf("did cuCtxSynchronize wait_ns=%" PRIu64 "\n", t1 - t0);
    cudaMalloc(&dev, 1 << 20);
    free(dev);
    printf("did cudaMalloc bytes=1048576\n");
    return 0;
}

static jmp_buf unwind_to;

static void unwind_out(void)
{
    longjmp(unwind_to, 1);
}

/* n broadcasts left by longjmp, their returns never seen; then an
 * all-reduce that returns. */
static int mode_unwind(uint64_t n)
{
    static float buf[16];

    calls_init_comm();
    for (volatile uint64_t i = 0; i < n; i++)
        if (!setjmp(unwind_to))
            ncclBroadcast((const void *)unwind_out, NULL, 0, 0, 0, COMM, STREAM);
    ncclAllReduce(buf, buf, 16, 7 /* float32 */, 0, COMM, STREAM);
    printf("did unwind n=%" PRIu64 ", then ncclAllReduce bytes=64\n", n);
    return 0;
}

static int mode_realnccl(const char *path)
{
    void *h = dlopen(path, RTLD_NOW);
    int (*allreduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
    int (*gstart)(void), (*gend)(void);

    if (!h) {
        printf("skip: dlopen %s: %s\n", path, dlerror());
        return 77;
    }
    wait_go();
    *(void **)&allreduce = dlsym(h, "ncclAllReduce");
    *(void **)&gstart = dlsym(h, "ncclGroupStart");
    *(void **)&gend = dlsym(h, "ncclGroupEnd");
    if (!allreduce || !gstart || !gend)
        return 1;
    printf("did ncclGroupStart ret=%d\n", gstart());
    printf("did ncclAllReduce count=4096 ret=%d\n", allreduce(NULL, NULL, 4096, 7, 0, NULL, NULL));
    printf("did ncclGroupEnd ret=%d\n", gend());
    return 0;
}

static void *sleeper(void *arg)
{
    uint64_t ms = *(uint64_t *)arg, t0, t1;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    spin_ns(5000000);
    t0 = now_ns();
    while (nanosleep(&ts, &ts) != 0)
        ;
    t1 = now_ns();
    spin_ns(5000000);
    printf("did sleep tid=%ld slept_ns=%" PRIu64 "\n", (long)syscall(SYS_gettid), t1 - t0);
    return NULL;
}

__attribute__((noinline)) void workload_busy_function(uint64_t ns);
__attribute__((noinline)) void workload_busy_function(uint64_t ns)
{
    spin_ns(ns);
}

static int mode_marker(const char *lib, int steps)
{
    void *h = dlopen(lib, RTLD_NOW);
    void (*step)(uint64_t), (*begin)(const char *), (*end)(void);

    if (!h) {
        printf("dlopen %s: %s\n", lib, dlerror());
        return 1;
    }
    *(void **)&step = dlsym(h, "argus_step");
    *(void **)&begin = dlsym(h, "argus_phase_begin");
    *(void **)&end = dlsym(h, "argus_phase_end");
    if (!step || !begin || !end)
        return 1;
    wait_go();
    for (int i = 0; i < steps; i++) {
        step((uint64_t)i + 100);
        begin("forward");
        spin_ns(1000000);
        end();
        begin("backward");
        spin_ns(2000000);
        end();
    }
    printf("did marker steps=%d first=100\n", steps);
    return 0;
}

static void report(const char *what, uint64_t n, uint64_t t0)
{
    uint64_t dt = now_ns() - t0;

    printf("did %s n=%" PRIu64 " total_ns=%" PRIu64 " ns_per_op=%.1f\n", what, n, dt,
           (double)dt / (double)(n ? n : 1));
}

static void *ponger(void *arg)
{
    int *fds = arg;
    char c;

    while (read(fds[0], &c, 1) == 1 && c)
        if (write(fds[3], &c, 1) != 1)
            break;
    return NULL;
}

static int mode_pingpong(uint64_t n)
{
    int fds[4];
    pthread_t t;
    char c = 1;
    uint64_t t0;

    cpu_set_t one;

    /* Both threads on one CPU: the cost measured is the switch, not the
     * wakeup latency of an idle CPU. */
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one);
    if (pipe(fds) < 0 || pipe(fds + 2) < 0)
        return 1;
    pthread_create(&t, NULL, ponger, fds);
    t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (write(fds[1], &c, 1) != 1 || read(fds[2], &c, 1) != 1)
            return 1;
    report("pingpong", n, t0);
    c = 0;
    if (write(fds[1], &c, 1) != 1)
        return 1;
    pthread_join(t, NULL);
    return 0;
}

static int mode_forkexec(uint64_t n)
{
    uint64_t t0 = now_ns();

    for (uint64_t i = 0; i < n; i++) {
        pid_t p = fork();

        if (p == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(p, NULL, 0);
    }
    report("forkexec", n, t0);
    return 0;
}

static int mode_io(uint64_t mb)
{
    const char *path = getenv("ARGUS_IO_FILE");
    void *buf = NULL;
    uint64_t t0 = now_ns();
    int fd, rc = 1;

    if (!path || posix_memalign(&buf, 4096, 1 << 20))
        return 1;
    memset(buf, 0x5a, 1 << 20);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0600);
    if (fd < 0)
        goto out;
    for (uint64_t i = 0; i < mb; i++)
        if (write(fd, buf, 1 << 20) != 1 << 20)
            goto out;
    rc = fdatasync(fd) == 0 ? 0 : 1;
    report("io", mb, t0);
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

static int mode_synretrans(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), c[4];

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 0) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) < 0)
        return 1;
    for (int i = 0; i < 4; i++) {
        c[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(c[i], (struct sockaddr *)&a, sizeof(a)); /* EINPROGRESS */
    }
    usleep(2500000); /* SYN retransmits at about 1 s and 3 s */
    printf("did synretrans port=%d\n", ntohs(a.sin_port));
    for (int i = 0; i < 4; i++)
        close(c[i]);
    close(l);
    return 0;
}

/* The train mode's compute: a fixed amount of work (a multiply-add chain),
 * so that what the probes do on the thread while it runs (a sample, a
 * switch) lengthens it as it would a real step's; a spin until a deadline
 * would absorb it. Returns the chain's value (callers add it to
 * workload_sink, so that it is not elided). */
static volatile uint64_t workload_sink;
__attribute__((noinline)) uint64_t workload_compute_function(uint64_t iters);
__attribute__((noinline)) uint64_t workload_compute_function(uint64_t iters)
{
    uint64_t x = iters;

    for (uint64_t i = 0; i < iters; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

static uint64_t thread_cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Iterations of workload_compute_function that take 2 ms of thread CPU:
 * $TRAIN_COMPUTE_ITERS, else measured here (the fastest of 5 runs: one
 * that an interrupt lengthened does not count). */
static uint64_t train_compute_iters(void)
{
    const char *env = getenv("TRAIN_COMPUTE_ITERS");
    uint64_t chunk = 500000, best = UINT64_MAX;

    if (env)
        return strtoull(env, NULL, 0);
    for (int k = 0; k < 6; k++) { /* the first one warms up */
        uint64_t t0 = thread_cpu_ns(), dt;

        workload_sink += workload_compute_function(chunk);
        dt = thread_cpu_ns() - t0;
        if (k > 0 && dt < best)
            best = dt;
    }
    return chunk * 2000000u / (best ? best : 1);
}

/* The time this thread has waited on a run queue for a CPU, from
 * /proc/thread-self/schedstat (0 when unreadable). */
static uint64_t thread_run_delay_ns(void)
{
    unsigned long long exec = 0, delay = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "re");

    if (f) {
        if (fscanf(f, "%llu %llu", &exec, &delay) != 2)
            delay = 0;
        fclose(f);
    }
    return delay;
}

/* One of the compete threads: pinned to CPU 0 with the other, spins *arg
 * ms of wall time; prints the run-queue wait the kernel counted for it. */
static void *competer(void *arg)
{
    uint64_t ms = *(uint64_t *)arg, rd0;
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    sched_yield();
    rd0 = thread_run_delay_ns();
    spin_ns(ms * 1000000u);
    printf("did compete tid=%ld run_delay_ns=%" PRIu64 "\n", (long)syscall(SYS_gettid),
           thread_run_delay_ns() - rd0);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Per-step figures of the train mode, over the steps after the first
 * TRAIN_WARMUP (start-up: page faults, lazy binding, all ranks at once). */
#define TRAIN_WARMUP 5
struct train_stats {
    uint64_t n, wall, cpu, compute_cpu, run_delay; /* sums */
    uint64_t *walls;                               /* each step's wall time, n of them */
};

static void train_report(struct train_stats *st, uint64_t steps, uint64_t iters, uint64_t t0)
{
    uint64_t total = now_ns() - t0, median = 0, p10 = 0;
    double n = st->n ? (double)st->n : 1;

    qsort(st->walls, st->n, sizeof(*st->walls), cmp_u64);
    if (st->n) {
        median = st->walls[st->n / 2];
        p10 = st->walls[st->n / 10];
    }
    printf("did train n=%" PRIu64 " total_ns=%" PRIu64 " ns_per_op=%.1f compute_iters=%" PRIu64
           " measured=%" PRIu64 " step_ns=%.1f step_median_ns=%" PRIu64 " step_p10_ns=%" PRIu64
           " cpu_ns=%.1f compute_cpu_ns=%.1f calls_cpu_ns=%.1f run_delay_ns=%.1f\n",
           steps, total, (double)total / (double)(steps ? steps : 1), iters, st->n,
           (double)st->wall / n, median, p10, (double)st->cpu / n, (double)st->compute_cpu / n,
           (double)(st->cpu - st->compute_cpu) / n, (double)st->run_delay / n);
}

static int mode_train(uint64_t steps)
{
    const char *lib = getenv("ARGUS_MARKER_LIB");
    void (*step)(uint64_t) = NULL;
    static float buf[4096];
    struct train_stats st = {0};
    uint64_t iters = train_compute_iters(), t0;

    if (lib) {
        void *h = dlopen(lib, RTLD_NOW);

        if (h)
            *(void **)&step = dlsym(h, "argus_step");
    }
    st.walls = calloc(steps + 1, sizeof(*st.walls));
    if (!st.walls)
        return 1;
    wait_go();
    if (getenv("TRAIN_START_DELAY_US"))
        usleep((useconds_t)strtoul(getenv("TRAIN_START_DELAY_US"), NULL, 0));
    t0 = now_ns();
    for (uint64_t i = 0; i < steps; i++) {
        uint64_t w0, c0, c1, c2;

        if (i == TRAIN_WARMUP)
            st.run_delay = thread_run_delay_ns();
        w0 = now_ns();
        c0 = thread_cpu_ns();
        if (step)
            step(i);
        c1 = thread_cpu_ns();
        workload_sink += workload_compute_function(iters);
        c2 = thread_cpu_ns();
        for (int k = 0; k < 6; k++)
            ncclAllReduce(buf, buf, 1024u << k, 7, 0, COMM, STREAM);
        cudaStreamSynchronize(STREAM);
        if (i >= TRAIN_WARMUP) {
            st.walls[st.n++] = now_ns() - w0;
            st.wall += st.walls[st.n - 1];
            st.cpu += thread_cpu_ns() - c0;
            st.compute_cpu += c2 - c1;
        }
    }
    if (st.n)
        st.run_delay = thread_run_delay_ns() - st.run_delay;
    train_report(&st, steps, iters, t0);
    free(st.walls);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    uint64_t arg = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
    int rc = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (getenv("ARGUS_MARKER_LIB")) /* mapped before the probes look at us */
        dlopen(getenv("ARGUS_MARKER_LIB"), RTLD_NOW);
    if (!strcmp(mode, "realnccl") || !strcmp(mode, "marker"))
        return !strcmp(mode, "realnccl") ? mode_realnccl(argv[2])
                                         : mode_marker(argv[2], argc > 3 ? atoi(argv[3]) : 5);
    if (!strcmp(mode, "train")) /* calibrates before it waits */
        return mode_train(arg);
    wait_go();
    if (!strcmp(mode, "calls")) {
        rc = mode_calls();
    } else if (!strcmp(mode, "unwind")) {
        rc = mode_unwind(arg);
    } else if (!strcmp(mode, "sleep")) {
        pthread_t t;

        pthread_create(&t, NULL, sleeper, &arg);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "threads")) {
        uint64_t ms = 20;

        for (uint64_t i = 0; i < arg; i++) {
            pthread_t t;

            pthread_create(&t, NULL, sleeper, &ms);
            pthread_join(t, NULL);
        }
    } else if (!strcmp(mode, "compete")) {
        pthread_t t[2];

        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, competer, &arg);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(mode, "busy")) {
        workload_busy_function(arg * 1000000u);
        printf("did busy ms=%" PRIu64 "\n", arg);
    } else if (!strcmp(mode, "bench")) {
        uint64_t t0 = now_ns();

        for (uint64_t i = 0; i < arg; i++)
            ncclAllReduce(NULL, NULL, 1, 7, 0, COMM, STREAM);
        report("bench", arg, t0);
    } else if (!strcmp(mode, "benchmarker")) {
        void *h = dlopen(getenv("ARGUS_MARKER_LIB") ? getenv("ARGUS_MARKER_LIB") : "", RTLD_NOW);
        void (*step)(uint64_t) = h ? (void (*)(uint64_t))dlsym(h, "argus_step") : NULL;
        uint64_t t0 = now_ns();

        if (!step)
            return 1;
        for (uint64_t i = 0; i < arg; i++)
            step(i);
        report("benchmarker", arg, t0);
    } else if (!strcmp(mode, "benchsync")) {
        uint64_t t0 = now_ns();

        for (uint64_t i = 0; i < arg; i++) {
            void *p = NULL;

            cudaMalloc(&p, 16);
            free(p);
        }
        report("benchsync", arg, t0);
    } else if (!strcmp(mode, "pingpong")) {
        rc = mode_pingpong(arg);
    } else if (!strcmp(mode, "spin")) {
        uint64_t t0 = now_ns();

        for (int i = 0; i < 20; i++)
            workload_busy_function(arg * 50000u); /* 20 x MS/20 */
        report("spin", 20, t0);
    } else if (!strcmp(mode, "forkexec")) {
        rc = mode_forkexec(arg);
    } else if (!strcmp(mode, "io")) {
        rc = mode_io(arg);
    } else if (!strcmp(mode, "synretrans")) {
        rc = mode_synretrans();
    } else {
        fprintf(stderr, "usage: workload MODE [ARG] (see tests/bpf/workload.c)\n");
        rc = 2;
    }
    return rc;
}
