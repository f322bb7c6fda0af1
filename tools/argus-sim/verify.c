#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "tools/argus-sim/delivery.h"
#include "tools/argus-sim/restamp.h"
#include "tools/argus-sim/sim.h"

/* Unary call; returns the unpacked reply or NULL after saying why. */
static ProtobufCMessage *verify_call(struct rpc_channel *ch, const char *method,
                                     const ProtobufCMessage *req,
                                     const ProtobufCMessageDescriptor *type)
{
    ProtobufCMessage *m;
    int status;
    char msg[256] = "";

    if (rpc_call(ch, method, req, type, 30000, &m, &status, msg, sizeof(msg)) < 0 ||
        status != RPC_OK)
        fprintf(stderr, "verify: %s: status %d: %s\n", method, status, msg);
    return m;
}

static int verify_job_info(struct rpc_channel *ch, const struct sim_config *c)
{
    Argus__V1__JobsRequest req = ARGUS__V1__JOBS_REQUEST__INIT;
    Argus__V1__JobsResponse *resp = (Argus__V1__JobsResponse *)verify_call(
        ch, RPC_QUERY_JOBS, &req.base, &argus__v1__jobs_response__descriptor);
    int bad = 1;

    if (!resp)
        return 1;
    for (size_t i = 0; i < resp->n_jobs; i++) {
        Argus__V1__JobInfo *j = resp->jobs[i];
        if (strcmp(j->job, c->job) != 0)
            continue;
        uint64_t want = c->ranks * c->steps;
        bad = j->rank_steps != want || j->ranks_seen != c->ranks || j->last_step + 1 != c->steps;
        printf("verify: job %s: rank_steps %" PRIu64 " (want %" PRIu64 "), ranks_seen %" PRIu32
               " (want %" PRIu64 "), last_step %" PRIu64 "\n",
               j->job, j->rank_steps, want, j->ranks_seen, c->ranks, j->last_step);
    }
    argus__v1__jobs_response__free_unpacked(resp, NULL);
    return bad;
}

/* Compare the stored records of steps [from, to] with regenerated ones. */
static int verify_range(struct rpc_channel *ch, const struct sim_config *c,
                        const struct delivery_offset *offsets, size_t noffsets, uint64_t from,
                        uint64_t to, uint32_t *per_step, uint64_t *seen, uint64_t *mismatched)
{
    Argus__V1__StepsRequest req = ARGUS__V1__STEPS_REQUEST__INIT;
    struct gen_step g;

    req.job = c->job;
    req.rank = -1;
    req.from_step = from;
    req.to_step = to;
    req.limit = 100000;
    Argus__V1__StepsResponse *resp = (Argus__V1__StepsResponse *)verify_call(
        ch, RPC_QUERY_STEPS, &req.base, &argus__v1__steps_response__descriptor);
    if (!resp)
        return -EIO;
    for (size_t i = 0; i < resp->n_steps; i++) {
        Argus__V1__StepRecord *s = resp->steps[i];
        if (s->step < c->steps)
            per_step[s->step]++;
        gen_step(&g, c->seed, c->job, s->rank, s->step, sim_base_unix_ns(c), c->step_ns);
        restamp_record(
            &g.rec, delivery_offset_of(offsets, noffsets, (uint32_t)(s->rank / c->ranks_per_node)));
        size_t a = argus__v1__step_record__get_packed_size(s);
        size_t b = argus__v1__step_record__get_packed_size(&g.rec);
        uint8_t *pa = malloc(a + 1), *pb = malloc(b + 1);
        argus__v1__step_record__pack(s, pa);
        argus__v1__step_record__pack(&g.rec, pb);
        if (a != b || memcmp(pa, pb, a) != 0) {
            if (*mismatched < 5)
                printf("verify: rank %" PRIu32 " step %" PRIu64 " differs from what was sent\n",
                       s->rank, s->step);
            (*mismatched)++;
        }
        free(pa);
        free(pb);
    }
    *seen += resp->n_steps;
    argus__v1__steps_response__free_unpacked(resp, NULL);
    return 0;
}

/* Say which steps miss records, as runs of steps with the records found
 * in each run (the first 8 runs): a count alone does not tell a lost stretch
 * of writes from a lost tail. */
static void verify_print_gaps(const struct sim_config *c, const uint32_t *per_step)
{
    unsigned runs = 0;

    for (uint64_t st = 0; st < c->steps && runs < 8;) {
        if (per_step[st] == c->ranks) {
            st++;
            continue;
        }
        uint64_t end = st, n = 0;
        while (end < c->steps && per_step[end] != c->ranks)
            n += per_step[end++];
        printf("verify: steps %" PRIu64 "-%" PRIu64 ": %" PRIu64 " of %" PRIu64 " records\n", st,
               end - 1, n, (end - st) * c->ranks);
        runs++;
        st = end;
    }
}

int sim_verify(const struct sim_config *c)
{
    struct rpc_channel *ch = rpc_channel_new(c->collector, NULL);
    uint64_t seen = 0, mismatched = 0, per_query = 50000 / (c->ranks ? c->ranks : 1);
    struct delivery_offset *offsets;
    char err[200];
    long noffsets =
        delivery_parse_offsets(c->clock_offset ? c->clock_offset : "", &offsets, err, sizeof(err));
    int bad;

    if (!ch || noffsets < 0) {
        rpc_channel_free(ch);
        return 1;
    }
    uint32_t *per_step = calloc(c->steps ? c->steps : 1, sizeof(*per_step));

    if (!per_step) {
        fprintf(stderr, "verify: out of memory\n");
        rpc_channel_free(ch);
        free(offsets);
        return 1;
    }
    if (per_query < 1)
        per_query = 1;
    /* the records are read even when the job's counts are off: what is
     * missing or doubled says whether data or only a count went wrong */
    bad = verify_job_info(ch, c);
    for (uint64_t from = 0; from < c->steps; from += per_query) {
        uint64_t to = from + per_query - 1 < c->steps - 1 ? from + per_query - 1 : c->steps - 1;
        if (verify_range(ch, c, offsets, (size_t)noffsets, from, to, per_step, &seen, &mismatched) <
            0) {
            bad = 1;
            break;
        }
    }
    printf("verify: %" PRIu64 " records read, %" PRIu64 " expected, %" PRIu64 " mismatched\n", seen,
           c->ranks * c->steps, mismatched);
    if (seen != c->ranks * c->steps)
        verify_print_gaps(c, per_step);
    free(per_step);
    rpc_channel_free(ch);
    free(offsets);
    return bad || mismatched || seen != c->ranks * c->steps;
}
