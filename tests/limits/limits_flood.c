/* limits_flood: a hostile or runaway client for the collector's admission
 * limits (collector/ingest/limits.h). It sends --jobs batches on the real protocol,
 * each for a new job (PREFIX0, PREFIX1, ...) with one Resource (rank, world
 * size) and one step record, from one agent stream, and reopens the stream
 * whenever the collector ends it (a refusal ends the stream). Prints one
 * JSON line: batches sent, acked, refused by status, and the last refusal's
 * message.
 *
 *   limits_flood --collector 127.0.0.1:7700 --jobs 10000 [--world 65536]
 *                [--rank 0] [--prefix flood-] [--agent flood] [--epoch 1] [--step 1]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"

struct flood {
    const char *collector, *prefix, *agent;
    uint64_t jobs, epoch, step;
    uint32_t world, rank;
    uint64_t sent, acked, refused[17];
    char last[256];
};

/* The frame of batch i (malloc'd), or NULL on ENOMEM. */
static void *flood_frame(const struct flood *f, uint64_t i, size_t *len)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT, *rp = &res;
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT, *sp = &s;
    char job[64];
    void *frame = NULL;

    snprintf(job, sizeof(job), "%s%" PRIu64, f->prefix, i);
    res.job = s.job = job;
    res.rank = s.rank = f->rank;
    res.world_size = f->world;
    res.node = (char *)f->agent;
    res.gpu = -1;
    s.step = f->step;
    s.duration_ns = 1000000;
    b.agent_id = (char *)f->agent;
    b.epoch = f->epoch;
    b.seq = i + 1;
    b.n_resources = 1;
    b.resources = &rp;
    b.n_steps = 1;
    b.steps = &sp;
    size_t n = argus__v1__batch__get_packed_size(&b);
    uint8_t *raw = malloc(n ? n : 1);
    if (!raw)
        return NULL;
    argus__v1__batch__pack(&b, raw);
    if (frame_encode(raw, n, FRAME_CODEC_NONE, &frame, len) < 0)
        frame = NULL;
    free(raw);
    return frame;
}

/* Send batch i on *st (reopened when ended) and wait for its answer. */
static int flood_one(struct flood *f, struct rpc_channel *ch, struct rpc_stream **st, uint64_t i)
{
    struct rpc_stream_event ev;
    size_t len;
    void *frame = flood_frame(f, i, &len);

    if (!frame)
        return -ENOMEM;
    for (int tries = 0; tries < 2; tries++) { /* a stream the server ended: a new one */
        if (!*st)
            *st = rpc_stream_open(ch, RPC_INGEST_PUSH, true);
        if (*st && rpc_stream_send(*st, frame, len) == 0)
            break;
        rpc_stream_free(*st);
        *st = NULL;
    }
    free(frame);
    if (!*st)
        return -EPIPE;
    f->sent++;
    for (int waited = 0; waited < 600; waited++) { /* 60 s per batch at most */
        rpc_stream_poll(*st, 100, &ev);
        if (ev.kind == RPC_STREAM_MESSAGE) {
            f->acked++;
            return 0;
        }
        if (ev.kind == RPC_STREAM_CLOSED) {
            f->refused[ev.status >= 0 && ev.status < 17 ? ev.status : 16]++;
            snprintf(f->last, sizeof(f->last), "%s", ev.message);
            rpc_stream_free(*st);
            *st = NULL;
            return 0;
        }
    }
    return -ETIMEDOUT;
}

static int flood_args(struct flood *f, int argc, char **argv)
{
    static const struct option opts[] = {
        {"collector", 1, 0, 'c'}, {"jobs", 1, 0, 'n'},   {"world", 1, 0, 'w'},
        {"rank", 1, 0, 'r'},      {"prefix", 1, 0, 'p'}, {"agent", 1, 0, 'a'},
        {"epoch", 1, 0, 'e'},     {"step", 1, 0, 's'},   {0, 0, 0, 0},
    };
    int c;

    *f = (struct flood){.collector = "127.0.0.1:7700",
                        .prefix = "flood-",
                        .agent = "flood",
                        .jobs = 1,
                        .epoch = 1,
                        .step = 1};
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            f->collector = optarg;
            break;
        case 'n':
            f->jobs = strtoull(optarg, NULL, 10);
            break;
        case 'w':
            f->world = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'r':
            f->rank = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'p':
            f->prefix = optarg;
            break;
        case 'a':
            f->agent = optarg;
            break;
        case 'e':
            f->epoch = strtoull(optarg, NULL, 10);
            break;
        case 's':
            f->step = strtoull(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr, "usage: limits_flood --collector HOST:PORT --jobs N [--world W] "
                            "[--rank R] [--prefix P] [--agent A] [--epoch E] [--step S]\n");
            return -EINVAL;
        }
    }
    return f->jobs && f->epoch ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
    struct flood f;
    struct rpc_channel *ch;
    struct rpc_stream *st = NULL;
    int r = 0;

    if (flood_args(&f, argc, argv) < 0)
        return 2;
    ch = rpc_channel_new(f.collector, NULL);
    if (!ch)
        return 1;
    for (uint64_t i = 0; i < f.jobs && r == 0; i++)
        r = flood_one(&f, ch, &st, i);
    rpc_stream_free(st);
    rpc_channel_free(ch);
    printf("{\"sent\":%" PRIu64 ",\"acked\":%" PRIu64 ",\"invalid_argument\":%" PRIu64
           ",\"resource_exhausted\":%" PRIu64 ",\"other\":%" PRIu64 ",\"last\":\"",
           f.sent, f.acked, f.refused[3], f.refused[8],
           f.sent - f.acked - f.refused[3] - f.refused[8]);
    for (const char *p = f.last; *p; p++)
        printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
    printf("\"}\n");
    if (r < 0)
        fprintf(stderr, "limits_flood: %s after %" PRIu64 " batches\n", strerror(-r), f.sent);
    return r < 0 ? 1 : 0;
}
