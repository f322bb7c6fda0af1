/* Test harness for the CUPTI tests: a source_cupti instance on a temporary
 * socket whose sink records every event, and a runner that starts
 * build/tests/cupti/cupti-app (the stand-in CUDA application) with an
 * environment and keeps dispatching the source until the app is gone.
 * Header-only (static functions), included by tests/unit/test_cupti_*.c. */
#ifndef ARGUS_TESTS_CUPTI_HARNESS_H
#define ARGUS_TESTS_CUPTI_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "agent/sources/source_cupti.h"
#include "common/clock.h"

#define H_NAMES 8192

struct h_kernel {
    uint64_t name_id, dur, ts;
    uint32_t stream, corr, kind;
};

struct h_phase {
    uint64_t name_id, dur, ts;
    uint32_t stream;
};

struct h_sink {
    struct h_kernel *k;
    size_t nk, capk;
    struct h_phase p[256];
    size_t np;
    uint64_t steps, sampled_steps;
    uint64_t drops[CUPTI_DROP_REASONS];
    uint64_t names_announced;
    uint32_t pid0; /* pid of the first event */
    struct {
        uint64_t id;
        char *s;
    } names[H_NAMES];
};

static __attribute__((unused)) const char *h_name(struct h_sink *h, uint64_t id)
{
    size_t i = id & (H_NAMES - 1);

    while (h->names[i].id && h->names[i].id != id)
        i = (i + 1) & (H_NAMES - 1);
    return h->names[i].id ? h->names[i].s : NULL;
}

static __attribute__((unused)) void h_on_name(void *ctx, uint64_t id, const char *name)
{
    struct h_sink *h = ctx;
    size_t i = id & (H_NAMES - 1);

    h->names_announced++;
    while (h->names[i].id && h->names[i].id != id)
        i = (i + 1) & (H_NAMES - 1);
    if (!h->names[i].id) {
        h->names[i].id = id;
        h->names[i].s = strdup(name);
    }
}

static __attribute__((unused)) void h_on_event(void *ctx, const struct agent_event *ev)
{
    struct h_sink *h = ctx;

    if (!h->pid0)
        h->pid0 = ev->pid;
    if (ev->kind == AGENT_EVENT_KERNEL) {
        if (h->nk == h->capk) {
            size_t cap = h->capk ? h->capk * 2 : 4096;
            struct h_kernel *tmp = realloc(h->k, cap * sizeof(*tmp));
            if (!tmp)
                return;
            h->k = tmp;
            h->capk = cap;
        }
        h->k[h->nk++] =
            (struct h_kernel){ev->kernel.name_id, ev->kernel.duration_ns, ev->ts_ns,
                              ev->kernel.stream,  ev->kernel.correlation, ev->kernel.kernel_kind};
    } else if (ev->kind == AGENT_EVENT_PHASE && h->np < 256) {
        h->p[h->np++] =
            (struct h_phase){ev->phase.name_id, ev->phase.duration_ns, ev->ts_ns, ev->phase.stream};
    } else if (ev->kind == AGENT_EVENT_STEP) {
        h->steps++;
        h->sampled_steps += !!(ev->flags & SOURCE_CUPTI_STEP_SAMPLED);
    } else if (ev->kind == AGENT_EVENT_DROPS) {
        for (int i = 0; i < CUPTI_DROP_REASONS; i++)
            if (ev->drops.reason && strstr(ev->drops.reason, i == 0   ? "no_buffer"
                                                             : i == 1 ? "ring_full"
                                                                      : "no_agent"))
                h->drops[i] += ev->drops.count;
    }
}

static __attribute__((unused)) void h_sink_free(struct h_sink *h)
{
    for (size_t i = 0; i < H_NAMES; i++)
        free(h->names[i].s);
    free(h->k);
    memset(h, 0, sizeof(*h));
}

/* Where the build put things (tests/run.sh exports ARGUS_BUILD). */
static __attribute__((unused)) const char *h_build(void)
{
    const char *b = getenv("ARGUS_BUILD");
    return b ? b : "build";
}

static __attribute__((unused)) void *h_source(struct h_sink *h, const char *sock)
{
    struct source_cupti_config cfg = {.socket_path = sock};
    struct event_sink sink = {h_on_event, h_on_name, h};
    char why[256];
    void *s = source_cupti_ops.create(&cfg, why, sizeof(why));

    if (s && source_cupti_ops.start(s, &sink, why, sizeof(why)) < 0) {
        fprintf(stderr, "source: %s\n", why);
        source_cupti_ops.destroy(s);
        return NULL;
    }
    return s;
}

static __attribute__((unused)) void h_pump(void *src, uint64_t ns)
{
    uint64_t end = clock_mono_ns() + ns;

    do {
        struct pollfd p = {.fd = source_cupti_ops.fd(src), .events = POLLIN};
        poll(&p, 1, 2);
        source_cupti_ops.dispatch(src);
    } while (clock_mono_ns() < end);
}

/* Pump src until it has read everything there is: no new span for 500 ms
 * (at most 20 s). After the app exits its rings hold what it published last;
 * how long reading them takes depends on the machine's load and on the
 * sanitizers, so a fixed time is a race (100 ms of quiet lost 4% of a
 * million records under ASan on a loaded CI machine). */
static __attribute__((unused)) void h_drain(void *src)
{
    uint64_t end = clock_mono_ns() + 20 * 1000000000ull;
    struct source_cupti_stats st;
    uint64_t last = UINT64_MAX;
    int quiet = 0;

    while (quiet < 25 && clock_mono_ns() < end) {
        h_pump(src, 20000000);
        source_cupti_get_stats(src, &st);
        quiet = st.spans == last ? quiet + 1 : 0;
        last = st.spans;
    }
}

struct h_app {
    pid_t pid;
    int out;
    char text[4096];
    size_t len;
};

/* Start cupti-app with args and env ("K=V" strings, NULL-terminated; "K="
 * unsets K). Returns 0 or -errno. */
static __attribute__((unused)) int h_app_start(struct h_app *a, char *const args[],
                                               char *const env[])
{
    char lib[512], dbl[512], app[512];
    int p[2];
    char *argv[16];
    int n = 0;

    snprintf(lib, sizeof(lib), "%s/lib/libargus-cupti.so", h_build());
    snprintf(dbl, sizeof(dbl), "%s/tests/libcupti-double.so", h_build());
    snprintf(app, sizeof(app), "%s/tests/cupti/cupti-app", h_build());
    if (access(lib, R_OK) || access(dbl, R_OK) || access(app, X_OK))
        return -ENOENT;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    argv[n++] = app;
    argv[n++] = lib;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    memset(a, 0, sizeof(*a));
    a->pid = fork();
    if (a->pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        setenv("ARGUS_CUPTI_LIB", dbl, 1);
        unsetenv("ASAN_OPTIONS");
        unsetenv("LD_PRELOAD");
        for (int i = 0; env[i]; i++) {
            char *eq = strchr(env[i], '=');
            if (eq && !eq[1]) {
                char k[128];
                snprintf(k, sizeof(k), "%.*s", (int)(eq - env[i]), env[i]);
                unsetenv(k);
            } else {
                putenv(env[i]);
            }
        }
        execv(app, argv);
        _exit(127);
    }
    close(p[1]);
    a->out = p[0];
    fcntl(a->out, F_SETFL, O_NONBLOCK);
    return a->pid < 0 ? -errno : 0;
}

static __attribute__((unused)) void h_app_read(struct h_app *a)
{
    ssize_t r;

    while (a->len < sizeof(a->text) - 1 &&
           (r = read(a->out, a->text + a->len, sizeof(a->text) - 1 - a->len)) > 0)
        a->len += (size_t)r;
    a->text[a->len] = '\0';
}

/* Dispatch src (may be NULL) until the app exits or timeout; returns its
 * exit status, or -ETIMEDOUT (the app is killed). */
static __attribute__((unused)) int h_app_wait(struct h_app *a, void *src, uint64_t timeout_ns)
{
    uint64_t end = clock_mono_ns() + timeout_ns;
    int status;

    for (;;) {
        pid_t r = waitpid(a->pid, &status, WNOHANG);
        h_app_read(a);
        if (r == a->pid)
            break;
        if (clock_mono_ns() > end) {
            kill(a->pid, SIGKILL);
            waitpid(a->pid, &status, 0);
            close(a->out);
            return -ETIMEDOUT;
        }
        if (src)
            h_pump(src, 2000000);
        else
            usleep(2000);
    }
    if (src)
        h_drain(src); /* what the app published as it exited */
    h_app_read(a);
    close(a->out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The value of key=V in the app's "stats" line, or UINT64_MAX. */
static __attribute__((unused)) uint64_t h_stat(const struct h_app *a, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof(pat), " %s=", key);
    p = strstr(a->text, pat);
    return p ? strtoull(p + strlen(pat), NULL, 10) : UINT64_MAX;
}

#endif
