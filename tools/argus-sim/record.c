#include "tools/argus-sim/record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sources/records.h"
#include "common/kernel_code.h"
#include "common/frame.h"
#include "common/name_id.h"
#include "tools/argus-sim/gen.h"
#include "tools/argus-sim/scenario.h"

/* One output file: its stream and the name ids already written to it. */
struct record_file {
    FILE *f;
    uint64_t *names;
    size_t nnames;
};

/* The open output: one file, or one per node (--record_split). */
struct record_out {
    const struct sim_config *c;
    struct record_file *files;
    size_t nfiles;
    bool *resource_written; /* per rank */
    uint64_t seq;           /* batch numbers for the scenario's batchers */
};

static size_t record_nodes(const struct sim_config *c)
{
    return (size_t)((c->ranks + c->ranks_per_node - 1) / c->ranks_per_node);
}

/* The file that holds rank's entries. */
static struct record_file *record_file_of(struct record_out *o, uint32_t rank)
{
    return o->nfiles == 1 ? &o->files[0] : &o->files[rank / o->c->ranks_per_node];
}

static int record_open(const struct sim_config *c, struct record_out *o)
{
    memset(o, 0, sizeof(*o));
    o->c = c;
    o->nfiles = c->record_split ? record_nodes(c) : 1;
    o->files = calloc(o->nfiles, sizeof(*o->files));
    o->resource_written = calloc(c->ranks, sizeof(*o->resource_written));
    if (!o->files || !o->resource_written)
        return -ENOMEM;
    for (size_t i = 0; i < o->nfiles; i++) {
        char path[4096];
        if (c->record_split)
            snprintf(path, sizeof(path), "%s.node%zu", c->record, i);
        else
            snprintf(path, sizeof(path), "%s", c->record);
        o->files[i].f = fopen(path, "we");
        if (!o->files[i].f) {
            int err = -errno;
            fprintf(stderr, "argus-sim: %s: %s\n", path, strerror(errno));
            return err;
        }
    }
    return 0;
}

/* Close every file; returns 0 or -EIO when one could not be written. */
static int record_close(struct record_out *o)
{
    int r = 0;

    for (size_t i = 0; o->files && i < o->nfiles; i++) {
        if (o->files[i].f && fclose(o->files[i].f) != 0)
            r = -EIO;
        free(o->files[i].names);
    }
    free(o->files);
    free(o->resource_written);
    return r;
}

/* Write a name entry into file unless it holds that id already. */
static int record_name(struct record_file *file, const Argus__V1__NameEntry *e)
{
    for (size_t i = 0; i < file->nnames; i++)
        if (file->names[i] == e->id)
            return 0;
    uint64_t *grown = realloc(file->names, (file->nnames + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    file->names = grown;
    file->names[file->nnames++] = e->id;
    return records_write(file->f, RECORDS_NAME, &e->base);
}

/* Write step record s into its rank's file; without its hardware counters
 * under --hw false (an agent replaying the file reads its own). */
static int record_step(struct record_out *o, const struct sim_config *c, Argus__V1__StepRecord *s)
{
    Argus__V1__HwCounters *hw = s->hw;
    int r;

    if (!c->hw)
        s->hw = NULL;
    r = records_write(record_file_of(o, s->rank)->f, RECORDS_STEP, &s->base);
    s->hw = hw;
    return r;
}

/* Write rank's resource into its file, once. */
static int record_resource(struct record_out *o, const Argus__V1__Resource *res)
{
    if (res->rank >= o->c->ranks || o->resource_written[res->rank])
        return 0;
    o->resource_written[res->rank] = true;
    return records_write(record_file_of(o, res->rank)->f, RECORDS_RESOURCE, &res->base);
}

/* Plain records (gen.h): every file gets the whole dictionary, its ranks'
 * resources, then steps 0.. of its ranks in step order. */
static int record_plain(struct record_out *o)
{
    const struct sim_config *c = o->c;
    struct gen_layout layout = {(uint32_t)c->ranks, (uint32_t)c->ranks_per_node, (uint32_t)c->tp,
                                (uint32_t)c->pp};
    struct gen_step g;
    int r = 0;

    for (size_t f = 0; f < o->nfiles; f++)
        for (unsigned i = 0; i < GEN_NAMES && r == 0; i++) {
            Argus__V1__NameEntry e = ARGUS__V1__NAME_ENTRY__INIT;
            e.job = c->job;
            e.name = (char *)gen_name(i);
            e.id = name_id(e.name);
            r = record_name(&o->files[f], &e);
        }
    for (uint32_t k = 0; k < c->ranks && r == 0; k++) {
        Argus__V1__Resource res;
        char node[32];
        snprintf(node, sizeof(node), "node%05u", (unsigned)(k / c->ranks_per_node));
        gen_resource(&res, &layout, c->job, k, node);
        r = record_resource(o, &res);
    }
    for (uint64_t s = 0; s < c->steps && r == 0; s++)
        for (uint32_t k = 0; k < c->ranks && r == 0; k++) {
            gen_step(&g, c->seed, c->job, k, s, sim_base_unix_ns(c), c->step_ns);
            r = record_step(o, c, &g.rec);
        }
    return r;
}

/* One batch the batcher of node agent sealed: its names go to that node's
 * file, its resources and steps to the files of their ranks. */
static int record_batch(struct record_out *o, uint32_t agent, const Argus__V1__Batch *b)
{
    struct record_file *file = &o->files[o->nfiles == 1 ? 0 : agent];
    int r = 0;

    for (size_t i = 0; i < b->n_resources && r == 0; i++)
        r = record_resource(o, b->resources[i]);
    for (size_t i = 0; i < b->n_names && r == 0; i++)
        r = record_name(file, b->names[i]);
    for (size_t i = 0; i < b->n_steps && r == 0; i++)
        r = record_step(o, o->c, b->steps[i]);
    return r;
}

static uint64_t record_next_seq(void *ctx, uint32_t agent)
{
    return ++((struct record_out *)ctx)->seq;
}

static uint64_t record_epoch(void *ctx, uint32_t agent)
{
    return 1;
}

/* scenario_sink.push: decode the sealed frame back into its batch. */
static int record_push(void *ctx, uint32_t agent, uint64_t seq, void *frame, size_t len,
                       uint32_t nsteps)
{
    void *raw = NULL;
    size_t raw_len = 0;
    int r = frame_decode(frame, len, NULL, &raw, &raw_len, NULL);

    free(frame);
    if (r < 0)
        return r;
    Argus__V1__Batch *b = argus__v1__batch__unpack(NULL, raw_len, raw);
    free(raw);
    if (!b)
        return -EBADMSG;
    /* records are written as the agent's summarizer made them: kernels */
    r = kernel_code_expand_batch(b, SIZE_MAX, SIZE_MAX, NULL) < 0 ? -EBADMSG
                                                                  : record_batch(ctx, agent, b);
    argus__v1__batch__free_unpacked(b, NULL);
    return r;
}

/* A scenario's records, cut per node by the agent's own batcher one step at
 * a time, so every file is in step order. */
static int record_scenario(struct record_out *o, struct scenario_truth *truth)
{
    struct sim_config one_step = *o->c;
    struct scenario_sink sink = {
        .next_seq = record_next_seq, .epoch = record_epoch, .push = record_push, .ctx = o};

    one_step.steps_per_batch = 1;
    return scenario_generate(&one_step, &sink, truth);
}

static void record_print(const struct sim_config *c, size_t nfiles, const struct scenario_truth *t)
{
    printf("{\"record\": \"%s\", \"base_time\": %" PRIu64 ", \"files\": %zu", c->record,
           c->base_unix_ns, nfiles);
    if (*c->scenario) {
        printf(", \"scenario\": \"%s\", \"job\": \"%s\", \"onset\": %" PRIu64
               ", \"cause\": \"%s\", \"culprits\": [",
               c->scenario, c->job, c->onset, t->cause ? t->cause : "");
        for (size_t i = 0; i < t->nculprits; i++)
            printf("%s%u", i ? ", " : "", t->culprits[i]);
        printf("]");
    }
    printf("}\n");
}

int sim_record(const struct sim_config *c)
{
    struct record_out o;
    struct scenario_truth truth = {0};
    int r = record_open(c, &o); /* says which file it could not open */

    if (r == 0) {
        r = *c->scenario ? record_scenario(&o, &truth) : record_plain(&o);
        int closed = record_close(&o);
        r = r < 0 ? r : closed;
        if (r < 0)
            fprintf(stderr, "argus-sim: --record %s: %s\n", c->record, strerror(-r));
    } else {
        record_close(&o);
    }
    if (r == 0)
        record_print(c, c->record_split ? record_nodes(c) : 1, &truth);
    free(truth.culprits);
    return r;
}
