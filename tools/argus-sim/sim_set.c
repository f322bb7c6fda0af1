/* argus-sim over a collector set: see sim_set.h. */
#include "tools/argus-sim/sim_set.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/collector_set.h"

struct sim_set_run {
    struct sim_config c; /* the caller's, with collector set to this destination */
    struct sim_set_result *out;
    pthread_t thread;
    bool started;
};

static void *sim_set_thread(void *arg)
{
    struct sim_set_run *run = arg;

    run->out->rc = sim_run(&run->c, &run->out->r);
    return NULL;
}

/* The destinations of c->job: addresses into out[] and roles. Returns how
 * many, or -EINVAL/-ENOMEM with err set. */
static int sim_set_place(const struct sim_config *c, struct sim_set_result out[2], char *err,
                         size_t errlen)
{
    struct collector_set *s = malloc(sizeof(*s));
    size_t at[2], n = 0;
    int r;

    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    r = collector_set_parse(c->collector_set, s, err, errlen);
    if (r == 0)
        n = collector_set_place(s, c->job, at);
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].collector, sizeof(out[i].collector), "%s", s->member[at[i]].address);
        out[i].role = i == 0 ? "primary" : "standby";
    }
    free(s);
    return r < 0 ? r : (int)n;
}

int sim_set_run(const struct sim_config *c, struct sim_set_result out[2], char *err, size_t errlen)
{
    struct sim_set_run runs[2];
    uint64_t epoch = c->epoch ? c->epoch : clock_real_ns();
    int n = sim_set_place(c, out, err, errlen);

    for (int i = 0; i < n; i++) {
        runs[i] = (struct sim_set_run){.c = *c, .out = &out[i]};
        runs[i].c.collector = out[i].collector;
        runs[i].c.epoch = epoch; /* the same (epoch, seq) on both streams */
        runs[i].started = pthread_create(&runs[i].thread, NULL, sim_set_thread, &runs[i]) == 0;
        if (!runs[i].started)
            sim_set_thread(&runs[i]);
    }
    for (int i = 0; i < n; i++)
        if (runs[i].started)
            pthread_join(runs[i].thread, NULL);
    return n;
}

int sim_set_verify(const struct sim_config *c)
{
    struct sim_set_result out[2];
    struct sim_config one = *c;
    char err[300];
    int n = sim_set_place(c, out, err, sizeof(err)), rc = 0;

    if (n < 0) {
        fprintf(stderr, "argus-sim: --collector_set: %s\n", err);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        one.collector = out[i].collector;
        printf("verify %s (%s):\n", out[i].collector, out[i].role);
        fflush(stdout);
        if (sim_verify(&one) != 0)
            rc = 1;
    }
    return rc;
}
