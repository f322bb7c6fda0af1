/* cupti-app: a stand-in CUDA application. It loads libargus-cupti.so and
 * calls InitializeInjection as the CUDA driver does at cuInit, then drives the
 * CUPTI test double (which the library loaded through ARGUS_CUPTI_LIB).
 *
 *   cupti-app LIB [replay FILE [RATE]] | [gen RATE COUNT] | [foreign RATE COUNT]
 *             | [steps RATE COUNT EVERY] | [fork RATE COUNT]
 *
 * Prints "skipped" when the library did not set CUPTI up (not a rank), else
 * one line "stats k=v ..." with the double's counters and the app's own
 * wall time. Exit 0 unless something failed to load. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tests/cupti/double.h"

struct dbl {
    cupti_double_load_fn load;
    cupti_double_play_fn play;
    cupti_double_wait_fn wait;
    cupti_double_foreign_fn foreign;
    cupti_double_stats_fn stats;
    cupti_double_gen_steps_fn steps;
};

static uint64_t mono_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int dbl_open(struct dbl *d)
{
    const char *path = getenv("ARGUS_CUPTI_LIB");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;

    if (!h)
        return -1;
    *(void **)&d->load = dlsym(h, "cupti_double_load");
    *(void **)&d->play = dlsym(h, "cupti_double_play");
    *(void **)&d->wait = dlsym(h, "cupti_double_wait");
    *(void **)&d->foreign = dlsym(h, "cupti_double_foreign");
    *(void **)&d->stats = dlsym(h, "cupti_double_stats");
    *(void **)&d->steps = dlsym(h, "cupti_double_gen_steps");
    return d->load && d->play && d->wait && d->foreign && d->stats && d->steps ? 0 : -1;
}

/* Another CUPTI client comes and goes mid-run; report what the library did:
 * while the other client is there argus must leave its kinds and callbacks
 * alone; after it left argus must have registered and enabled again. */
static void app_foreign(struct dbl *d)
{
    struct cupti_double_stats st;
    int untouched, got, back;

    usleep(200000);
    d->foreign(1);
    usleep(300000);
    d->stats(&st);
    untouched = st.enabled_kernel == 1 && st.foreign_callbacks == 1;
    got = st.foreign_records > 0;
    d->foreign(0);
    usleep(300000);
    d->stats(&st);
    back = st.enabled_kernel == 1 && st.foreign_callbacks == 0;
    printf("foreign untouched=%d foreign_got=%d back=%d\n", untouched, got, back);
}

static void app_print(struct dbl *d, uint64_t wall)
{
    struct cupti_double_stats st;

    d->stats(&st);
    printf("nvtx %s\n", getenv("NVTX_INJECTION64_PATH") ? getenv("NVTX_INJECTION64_PATH") : "-");
    printf("stats produced=%" PRIu64 " dropped=%" PRIu64 " skipped=%" PRIu64 " kernels=%" PRIu64
           " buffers=%" PRIu64 " empty_requests=%" PRIu64 " foreign_records=%" PRIu64
           " callbacks=%" PRIu64 " cb_max_ns=%" PRIu64 " cb_p99_ns=%" PRIu64 " cb_total_ns=%" PRIu64
           " wall_ms=%" PRIu64 "\n",
           st.produced, st.dropped, st.skipped, st.kernels, st.buffers, st.empty_requests,
           st.foreign_records, st.callbacks, st.cb_max_ns, st.cb_p99_ns, st.cb_total_ns,
           wall / 1000000);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct dbl d;
    void *lib;
    int (*init)(void);
    const char *mode = argc > 2 ? argv[2] : "gen";
    uint64_t t0, rate = 0, count = 1000;

    if (argc < 2) {
        fprintf(stderr, "usage: %s LIB [replay FILE [RATE] | gen RATE COUNT | ...]\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib || !(*(void **)&init = dlsym(lib, "InitializeInjection"))) {
        fprintf(stderr, "cupti-app: %s\n", dlerror());
        return 1;
    }
    init();
    if (dbl_open(&d) < 0) {
        printf("skipped (CUPTI double not loaded)\n");
        return 0;
    }
    if (strcmp(mode, "replay") == 0) {
        if (argc < 4 || d.load(argv[3]) < 0) {
            fprintf(stderr, "cupti-app: cannot load %s\n", argc > 3 ? argv[3] : "(none)");
            return 1;
        }
        rate = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
    } else {
        rate = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
        count = argc > 4 ? strtoull(argv[4], NULL, 0) : 1000;
        if (strcmp(mode, "steps") == 0)
            d.steps(argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 0) : 1000);
    }
    t0 = mono_ns();
    if (d.play(rate, count) < 0) {
        printf("skipped (the library registered no CUPTI callbacks)\n");
        return 0;
    }
    if (strcmp(mode, "foreign") == 0)
        app_foreign(&d);
    d.wait();
    if (strcmp(mode, "fork") == 0) { /* a dataloader-style child exits through atexit */
        int status = -1;
        pid_t pid = fork();
        if (pid == 0)
            exit(0);
        waitpid(pid, &status, 0);
        printf("fork child_exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    app_print(&d, mono_ns() - t0);
    if (getenv("CUPTI_APP_LINGER_MS")) /* let a benchmark read our threads */
        usleep((useconds_t)atoi(getenv("CUPTI_APP_LINGER_MS")) * 1000);
    return 0;
}
