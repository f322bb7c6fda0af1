/* bench_cupti: what libargus-cupti.so costs and how fast records reach the
 * agent, against the CUPTI test double (build/tests/cupti/cupti-app).
 *   1. 100k records/s for 3 s: library CPU (worker thread "argus-cupti" from
 *      /proc schedstat + time inside CUPTI's callbacks) per record and as a
 *      share of one core; record age at the agent (kernel start -> event).
 *   2. as fast as the double can produce, 2M records: ns per record in the
 *      worker (completion -> ring) and in the agent reader (ring -> event).
 * The target: library < 200 ns/record (100k kernels/s < 2% of a core). */
#include <dirent.h>
#include <inttypes.h>
#include <time.h>

#include "tests/cupti/harness.h"

#define AGE_SAMPLES 65536

static struct {
    uint64_t kernels, ages[AGE_SAMPLES];
    size_t nages;
} b;

static void b_event(void *ctx, const struct agent_event *ev)
{
    if (ev->kind != AGENT_EVENT_KERNEL)
        return;
    if ((b.kernels++ & 7) == 0 && b.nages < AGE_SAMPLES)
        b.ages[b.nages++] = clock_mono_ns() - ev->ts_ns;
}

static void b_name(void *ctx, uint64_t id, const char *name)
{
}

/* CPU ns of the app's thread named argus-cupti (0 when not found). */
static uint64_t worker_cpu_ns(pid_t pid)
{
    char path[128], comm[32];
    uint64_t ns = 0;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if (!(d = opendir(path)))
        return 0;
    while ((e = readdir(d))) {
        FILE *f;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
        if (!(f = fopen(path, "re")))
            continue;
        if (fgets(comm, sizeof(comm), f) && strncmp(comm, "argus-cupti", 11) == 0) {
            fclose(f);
            snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
            if ((f = fopen(path, "re"))) {
                if (fscanf(f, "%" SCNu64, &ns) != 1)
                    ns = 0;
                fclose(f);
            }
            break;
        }
        fclose(f);
    }
    closedir(d);
    return ns;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
    return a < c ? -1 : a > c;
}

/* Run the app (gen rate count) with the source; returns worker CPU ns. */
static int run(const char *rate, const char *count, uint64_t *worker_ns, uint64_t *agent_ns,
               struct h_app *app)
{
    static char sock[128], envsock[200];
    struct source_cupti_config cfg = {.socket_path = sock};
    struct event_sink sink = {b_event, b_name, NULL};
    char why[256], *args[] = {"gen", (char *)rate, (char *)count, NULL};
    char *env[] = {"RANK=0", envsock, "CUPTI_APP_LINGER_MS=300", NULL};
    void *src;
    uint64_t cpu0;
    int status;

    snprintf(sock, sizeof(sock), "/tmp/argus-bench-cupti-%d.sock", (int)getpid());
    snprintf(envsock, sizeof(envsock), "ARGUS_AGENT_SOCKET=%s", sock);
    src = source_cupti_ops.create(&cfg, why, sizeof(why));
    if (!src || source_cupti_ops.start(src, &sink, why, sizeof(why)) < 0)
        return -1;
    if (h_app_start(app, args, env) < 0) {
        source_cupti_ops.destroy(src);
        return -ENOENT;
    }
    cpu0 = thread_cpu_ns();
    *worker_ns = 0;
    for (;;) {
        uint64_t w = worker_cpu_ns(app->pid);
        pid_t r = waitpid(app->pid, &status, WNOHANG);
        if (w)
            *worker_ns = w;
        h_app_read(app);
        if (r == app->pid)
            break;
        h_pump(src, 5000000);
    }
    h_pump(src, 20000000);
    *agent_ns = thread_cpu_ns() - cpu0;
    close(app->out);
    source_cupti_ops.destroy(src);
    return 0;
}

int main(void)
{
    struct h_app app;
    uint64_t worker, agent, cb, produced;
    double per;

    if (run("100000", "300000", &worker, &agent, &app) == -ENOENT) {
        printf("skip: build/lib/libargus-cupti.so or the CUPTI double is not built\n");
        return 0;
    }
    produced = h_stat(&app, "produced");
    cb = h_stat(&app, "cb_total_ns");
    per = (double)(worker + cb) / (double)produced;
    qsort(b.ages, b.nages, sizeof(b.ages[0]), cmp_u64);
    printf("cupti 100k rec/s: %" PRIu64 " records, library %.0f ns/record (worker %.0f, "
           "callbacks %.1f) = %.2f%% of one core; agent reader %.0f ns/record\n",
           produced, per, (double)worker / (double)produced, (double)cb / (double)produced,
           per * 100000 / 1e9 * 100, (double)agent / (double)produced);
    if (b.nages)
        printf("cupti 100k rec/s: record age at the agent p50 %.1f ms p99 %.1f ms "
               "(CUPTI buffer fill + flush period)\n",
               (double)b.ages[b.nages / 2] / 1e6, (double)b.ages[b.nages * 99 / 100] / 1e6);
    printf("cupti 100k rec/s: kernels at agent %" PRIu64 " of %" PRIu64 "\n", b.kernels,
           h_stat(&app, "kernels"));

    memset(&b, 0, sizeof(b));
    if (run("0", "2000000", &worker, &agent, &app) < 0)
        return 1;
    produced = h_stat(&app, "produced");
    printf("cupti max rate: %" PRIu64 " records in %" PRIu64 " ms, worker %.0f ns/record, "
           "agent reader %.0f ns/record, kernels at agent %" PRIu64 " of %" PRIu64
           ", dropped %" PRIu64 "\n",
           produced, h_stat(&app, "wall_ms"), (double)worker / (double)produced,
           (double)agent / (double)produced, b.kernels, h_stat(&app, "kernels"),
           h_stat(&app, "dropped"));
    return 0;
}
