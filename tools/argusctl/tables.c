/* argusctl's tables: see tables.h. */
#include "tools/argusctl/tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "proto/argus.pb-c.h"

const char *tables_time(uint64_t ns, char *buf, size_t len)
{
    return ns ? clock_format_rfc3339(ns, buf, len) : "-";
}

/* "running", "hung", ... ("-": a collector that does not say). */
static const char *tables_job_state(Argus__V1__JobState st)
{
    static const char *const names[] = {"-", "running", "hung", "failed", "restarting", "ended"};

    return (int)st >= 0 && (size_t)st < sizeof(names) / sizeof(names[0]) ? names[st] : "-";
}

void tables_jobs(const ProtobufCMessage *m, const char *job)
{
    const Argus__V1__JobsResponse *resp = (const Argus__V1__JobsResponse *)m;
    char t1[40], t2[40];

    printf("%-24s %7s %7s %10s %12s  %-24s  %-24s  %-10s  %s\n", "JOB", "RANKS", "WORLD",
           "LAST STEP", "RANK-STEPS", "FIRST SEEN", "LAST SEEN", "STATE", "WHY");
    for (size_t i = 0; i < resp->n_jobs; i++) {
        Argus__V1__JobInfo *j = resp->jobs[i];
        char why[600];
        snprintf(why, sizeof(why), "%s", j->state_reason[0] ? j->state_reason : "-");
        if (j->restart)
            snprintf(why + strlen(why), sizeof(why) - strlen(why), " (attempt %" PRIu32 ")",
                     j->restart);
        if (j->blind && *j->blind) /* diagnosis sheds work: findings may be missing */
            snprintf(why + strlen(why), sizeof(why) - strlen(why), "; BLIND %s", j->blind);
        printf("%-24s %7" PRIu32 " %7" PRIu32 " %10" PRIu64 " %12" PRIu64
               "  %-24s  %-24s  %-10s  %s\n",
               j->job, j->ranks_seen, j->world_size, j->last_step, j->rank_steps,
               tables_time(j->first_seen_unix_ns, t1, sizeof(t1)),
               tables_time(j->last_seen_unix_ns, t2, sizeof(t2)), tables_job_state(j->state), why);
    }
    if (resp->n_jobs == 0)
        printf("(no jobs)\n");
}

const char *tables_resolve(void *ctx, uint64_t id)
{
    const Argus__V1__StepsResponse *resp = ctx;

    for (size_t i = 0; i < resp->n_names; i++)
        if (resp->names[i]->id == id)
            return resp->names[i]->name;
    return NULL;
}

static void tables_print_step(const Argus__V1__StepsResponse *resp, const Argus__V1__StepRecord *s)
{
    char t[40];
    uint64_t kernels = 0;

    for (size_t k = 0; k < s->n_kernels; k++)
        for (size_t i = 0; i < s->kernels[k]->n_clusters; i++)
            kernels += s->kernels[k]->clusters[i]->count;
    printf("%8" PRIu64 " %6" PRIu32 "  %-24s %11.3f %8" PRIu64 " %6zu  ", s->step, s->rank,
           tables_time(s->start_unix_ns, t, sizeof(t)), s->duration_ns / 1e6, kernels,
           s->n_collectives);
    for (size_t p = 0; p < s->n_phases; p++) {
        const char *name = tables_resolve((void *)resp, s->phases[p]->name_id);
        printf("%s%s=%.3f", p ? " " : "", name ? name : "?", s->phases[p]->duration_ns / 1e6);
    }
    printf("\n");
}

void tables_steps(const ProtobufCMessage *m, const char *job)
{
    const Argus__V1__StepsResponse *resp = (const Argus__V1__StepsResponse *)m;

    printf("%8s %6s  %-24s %11s %8s %6s  %s\n", "STEP", "RANK", "START", "TIME(ms)", "KERNELS",
           "COLLS", "PHASES (ms)");
    for (size_t i = 0; i < resp->n_steps; i++)
        tables_print_step(resp, resp->steps[i]);
    if (resp->truncated)
        printf("(truncated: narrow --from/--to or raise --limit)\n");
    if (resp->n_steps == 0)
        printf("(no steps in that range)\n");
}

void tables_ranks(const ProtobufCMessage *m, const char *job)
{
    const Argus__V1__RanksResponse *resp = (const Argus__V1__RanksResponse *)m;

    printf("%6s %5s %6s  %-20s %4s %8s %4s %4s %4s %4s\n", "RANK", "LOCAL", "WORLD", "NODE", "GPU",
           "PID", "DP", "TP", "PP", "EP");
    for (size_t i = 0; i < resp->n_ranks; i++) {
        Argus__V1__Resource *x = resp->ranks[i];
        printf("%6" PRIu32 " %5" PRIu32 " %6" PRIu32 "  %-20s %4" PRId32 " %8" PRIu32 " %4" PRIu32
               " %4" PRIu32 " %4" PRIu32 " %4" PRIu32 "\n",
               x->rank, x->local_rank, x->world_size, x->node, x->gpu, x->pid, x->dp, x->tp, x->pp,
               x->ep);
    }
}
