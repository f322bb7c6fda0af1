/* collector/ingest/: a decoded batch checked against the per-batch limits
 * (ids, strings, counts, name ids), before anything of it is kept. See
 * validate.h. */
#include "collector/ingest/validate.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "collector/transport/transport.h"
#include "common/name_id.h"

/* A job, agent or node id: 1..max printable non-space ASCII bytes. */
static bool ingest_valid_id(const char *s, size_t max)
{
    size_t n = 0;

    if (!s)
        return false;
    for (; s[n]; n++)
        if (n >= max || (unsigned char)s[n] <= 0x20 || (unsigned char)s[n] >= 0x7f)
            return false;
    return n > 0;
}

#define REJECT(code, ...)                                                                          \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return (code);                                                                             \
    } while (0)

static int ingest_validate_resource(const Argus__V1__Resource *r, const struct ingest_limits *l,
                                    char *err, size_t errlen)
{
    if (!ingest_valid_id(r->job, l->max_id_len))
        REJECT(TRANSPORT_INVALID_ARGUMENT, "resource has an invalid job id (1-%zu printable bytes)",
               l->max_id_len);
    if (r->world_size && r->rank >= r->world_size)
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "resource rank %" PRIu32 " is not below world size %" PRIu32 " (job %s)", r->rank,
               r->world_size, r->job);
    if (strlen(r->node) > l->max_id_len || strlen(r->gpu_uuid) > l->max_id_len)
        REJECT(TRANSPORT_INVALID_ARGUMENT, "resource node or gpu_uuid longer than %zu bytes",
               l->max_id_len);
    return TRANSPORT_OK;
}

static int ingest_validate_step(const Argus__V1__StepRecord *s, const struct ingest_limits *l,
                                char *err, size_t errlen)
{
    if (!ingest_valid_id(s->job, l->max_id_len))
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "step record has an invalid job id (1-%zu printable "
               "bytes)",
               l->max_id_len);
    if (s->n_phases > l->max_groups_per_step || s->n_kernels > l->max_groups_per_step ||
        s->n_collectives > l->max_groups_per_step)
        REJECT(TRANSPORT_RESOURCE_EXHAUSTED,
               "step %" PRIu64 " of rank %" PRIu32 " has %zu phases,"
               " %zu kernel groups, %zu collectives; limit %zu each",
               s->step, s->rank, s->n_phases, s->n_kernels, s->n_collectives,
               l->max_groups_per_step);
    if (s->n_top_frames > l->max_groups_per_step)
        REJECT(TRANSPORT_RESOURCE_EXHAUSTED, "step with %zu top frames; limit %zu", s->n_top_frames,
               l->max_groups_per_step);
    for (size_t k = 0; k < s->n_kernels; k++)
        if (s->kernels[k]->n_clusters > l->max_clusters_per_group)
            REJECT(TRANSPORT_RESOURCE_EXHAUSTED, "kernel group with %zu clusters; limit %zu",
                   s->kernels[k]->n_clusters, l->max_clusters_per_group);
    return TRANSPORT_OK;
}

static int ingest_validate_status(const Argus__V1__RankStatus *s, const struct ingest_limits *l,
                                  char *err, size_t errlen)
{
    if (!ingest_valid_id(s->job, l->max_id_len))
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "rank status has an invalid job id (1-%zu printable bytes)", l->max_id_len);
    if (strlen(s->wait) > l->max_id_len)
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "rank status of rank %" PRIu32 " (job %s): wait of %zu bytes; limit %zu", s->rank,
               s->job, strlen(s->wait), l->max_id_len);
    if (s->n_comms > l->max_comms_per_status)
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "rank status of rank %" PRIu32 " (job %s) has %zu communicators; limit %zu", s->rank,
               s->job, s->n_comms, l->max_comms_per_status);
    if (s->n_stack > l->max_stack_frames)
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "rank status of rank %" PRIu32 " (job %s) has a stack of %zu frames; limit %zu",
               s->rank, s->job, s->n_stack, l->max_stack_frames);
    if ((int)s->state < ARGUS__V1__PROC_STATE__PROC_STATE_UNKNOWN ||
        (int)s->state > ARGUS__V1__PROC_STATE__PROC_STATE_EXITED)
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "rank status of rank %" PRIu32 " (job %s) has an unknown process state %d", s->rank,
               s->job, (int)s->state);
    for (size_t i = 0; i < s->n_comms; i++)
        if (s->comms[i]->done_seq > s->comms[i]->entered_seq && s->comms[i]->done_unix_ns &&
            s->comms[i]->entered_unix_ns)
            REJECT(TRANSPORT_INVALID_ARGUMENT,
                   "rank status of rank %" PRIu32 " (job %s): communicator %016" PRIx64
                   " finished #%" PRIu64 " but entered only #%" PRIu64,
                   s->rank, s->job, s->comms[i]->comm_id, s->comms[i]->done_seq,
                   s->comms[i]->entered_seq);
    return TRANSPORT_OK;
}

static int ingest_validate_names(const Argus__V1__Batch *b, const struct ingest_limits *l,
                                 char *err, size_t errlen)
{
    for (size_t i = 0; i < b->n_names; i++) {
        const Argus__V1__NameEntry *n = b->names[i];
        size_t len = strlen(n->name);
        if (!ingest_valid_id(n->job, l->max_id_len))
            REJECT(TRANSPORT_INVALID_ARGUMENT, "name entry has an invalid job id");
        if (len == 0 || len > l->max_name_len)
            REJECT(TRANSPORT_INVALID_ARGUMENT, "name of %zu bytes (allowed 1-%zu)", len,
                   l->max_name_len);
        if (n->id != name_id_n(n->name, len))
            REJECT(TRANSPORT_INVALID_ARGUMENT, "name id %016" PRIx64 " is not FNV-1a 64 of '%.64s'",
                   n->id, n->name);
    }
    return TRANSPORT_OK;
}

int ingest_validate(const Argus__V1__Batch *b, const struct ingest_limits *l, char *err,
                    size_t errlen)
{
    int r;

    if (!ingest_valid_id(b->agent_id, l->max_id_len))
        REJECT(TRANSPORT_INVALID_ARGUMENT, "batch has an invalid agent id (1-%zu printable bytes)",
               l->max_id_len);
    if (b->epoch == 0 || b->seq == 0)
        REJECT(TRANSPORT_INVALID_ARGUMENT,
               "batch epoch and seq must be > 0 (got %" PRIu64 "/%" PRIu64 ")", b->epoch, b->seq);
    if (b->n_steps > l->max_steps_per_batch)
        REJECT(TRANSPORT_RESOURCE_EXHAUSTED, "batch carries %zu step records; limit %zu",
               b->n_steps, l->max_steps_per_batch);
    if (b->n_names > l->max_names_per_batch)
        REJECT(TRANSPORT_RESOURCE_EXHAUSTED, "batch carries %zu names; limit %zu", b->n_names,
               l->max_names_per_batch);
    if (b->n_resources > l->max_resources_per_batch)
        REJECT(TRANSPORT_RESOURCE_EXHAUSTED, "batch carries %zu resources; limit %zu",
               b->n_resources, l->max_resources_per_batch);
    for (size_t i = 0; i < b->n_resources; i++)
        if ((r = ingest_validate_resource(b->resources[i], l, err, errlen)) != TRANSPORT_OK)
            return r;
    for (size_t i = 0; i < b->n_steps; i++)
        if ((r = ingest_validate_step(b->steps[i], l, err, errlen)) != TRANSPORT_OK)
            return r;
    if (b->n_statuses > l->max_statuses_per_batch)
        REJECT(TRANSPORT_RESOURCE_EXHAUSTED, "batch carries %zu rank statuses; limit %zu",
               b->n_statuses, l->max_statuses_per_batch);
    for (size_t i = 0; i < b->n_statuses; i++)
        if ((r = ingest_validate_status(b->statuses[i], l, err, errlen)) != TRANSPORT_OK)
            return r;
    for (size_t i = 0; i < b->n_drops; i++)
        if (strlen(b->drops[i]->reason) > l->max_id_len || strlen(b->drops[i]->job) > l->max_id_len)
            REJECT(TRANSPORT_INVALID_ARGUMENT, "drop counter reason or job too long");
    return ingest_validate_names(b, l, err, errlen);
}
