#include "agent/sources/records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sources/source_replay.h"
#include "common/clock.h"

int records_write(FILE *f, enum records_type type, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t hdr[5] = {(uint8_t)type, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
                      (uint8_t)(n >> 24)};
    uint8_t *buf = malloc(n + 1);
    int r = 0;

    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(m, buf);
    if (fwrite(hdr, 1, 5, f) != 5 || fwrite(buf, 1, n, f) != n)
        r = -EIO;
    free(buf);
    return r;
}

struct records {
    struct records_config c;
    const struct event_sink *sink;
    Argus__V1__StepRecord **steps;
    size_t nsteps, next;
    Argus__V1__Resource **res;
    size_t nres;
    Argus__V1__NameEntry **names;
    size_t nnames;
    uint64_t first_step, start_ns;
    bool ended; /* every rank's end told (after the last record) */
    int tfd;
};

static int records_supported(char *why, size_t whylen)
{
    return 0;
}

static int records_push(void ***arr, size_t *n, void *m)
{
    void **grown = realloc(*arr, (*n + 1) * sizeof(*grown));

    if (!grown)
        return -ENOMEM;
    grown[(*n)++] = m;
    *arr = grown;
    return 0;
}

/* Parse one entry at buf[off]; returns its size, or 0 on a bad entry. */
static size_t records_entry(struct records *r, const uint8_t *buf, size_t len, size_t off)
{
    if (len - off < 5)
        return 0;
    uint32_t n = buf[off + 1] | (uint32_t)buf[off + 2] << 8 | (uint32_t)buf[off + 3] << 16 |
                 (uint32_t)buf[off + 4] << 24;
    const uint8_t *p = buf + off + 5;
    int rc = -EINVAL;

    if (n > RECORDS_MAX_ENTRY || n > len - off - 5)
        return 0;
    if (buf[off] == RECORDS_NAME) {
        void *m = argus__v1__name_entry__unpack(NULL, n, p);
        rc = m ? records_push((void ***)&r->names, &r->nnames, m) : -EINVAL;
    } else if (buf[off] == RECORDS_RESOURCE) {
        void *m = argus__v1__resource__unpack(NULL, n, p);
        rc = m ? records_push((void ***)&r->res, &r->nres, m) : -EINVAL;
    } else if (buf[off] == RECORDS_STEP) {
        void *m = argus__v1__step_record__unpack(NULL, n, p);
        rc = m ? records_push((void ***)&r->steps, &r->nsteps, m) : -EINVAL;
    }
    return rc == 0 ? 5 + (size_t)n : 0;
}

static int records_load(struct records *r, char *why, size_t whylen)
{
    FILE *f = fopen(r->c.path, "re");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;
    int rc = 0;

    if (!f) {
        snprintf(why, whylen, "%s: %s", r->c.path, strerror(errno));
        return -errno;
    }
    do {
        if (len + 65536 > cap) {
            uint8_t *grown = realloc(buf, cap = cap ? cap * 2 : 1 << 20);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            buf = grown;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    for (size_t off = 0; rc == 0 && off < len;) {
        size_t n = records_entry(r, buf, len, off);
        if (!n) {
            snprintf(why, whylen, "%s: bad entry at byte %zu", r->c.path, off);
            rc = -EINVAL;
        }
        off += n;
    }
    free(buf);
    return rc;
}

static void records_destroy(void *state);

static void *records_create(const void *config, char *why, size_t whylen)
{
    const struct records_config *c = config;
    struct records *r = calloc(1, sizeof(*r));

    if (!r || !c || !c->path || !(c->rate > 0)) {
        snprintf(why, whylen, "record replay needs a file and rate > 0");
        free(r);
        return NULL;
    }
    r->c = *c;
    r->tfd = -1;
    if (records_load(r, why, whylen) < 0) {
        records_destroy(r);
        return NULL;
    }
    r->first_step = r->nsteps ? r->steps[0]->step : 0;
    return r;
}

static int records_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct records *r = state;

    r->sink = sink;
    for (size_t i = 0; i < r->nnames; i++)
        sink->name(sink->ctx, r->names[i]->id, r->names[i]->name);
    for (size_t i = 0; i < r->nres; i++) {
        struct agent_event ev = {.kind = AGENT_EVENT_RANK, .ts_ns = clock_mono_ns()};
        r->res[i]->pid = REPLAY_PID_BASE + r->res[i]->rank;
        ev.pid = r->res[i]->pid;
        ev.rank.resource = r->res[i];
        sink->event(sink->ctx, &ev);
    }
    /* step k of the file is due at start + k / rate: one wakeup per step */
    r->start_ns = clock_mono_ns();
    r->tfd = replay_timerfd(r->start_ns + NSEC_PER_MSEC, (uint64_t)(1e9 / r->c.rate));
    if (r->tfd < 0) {
        snprintf(why, whylen, "timerfd: %s", strerror(-r->tfd));
        return r->tfd;
    }
    return 0;
}

static int records_fd(void *state)
{
    return ((struct records *)state)->tfd;
}

/* Every rank of the file ends, cleanly: a replayed rank has no process
 * whose end a probe or /proc could tell (its pid is beyond the kernel's). */
static int records_end(struct records *r)
{
    r->ended = true;
    for (size_t i = 0; i < r->nres; i++) {
        struct agent_event ev = {.kind = AGENT_EVENT_PROC_EXIT, .ts_ns = clock_mono_ns()};
        ev.pid = REPLAY_PID_BASE + r->res[i]->rank;
        r->sink->event(r->sink->ctx, &ev);
    }
    return (int)r->nres;
}

static int records_dispatch(void *state)
{
    struct records *r = state;
    uint64_t x, due = (uint64_t)((double)(clock_mono_ns() - r->start_ns) * r->c.rate / 1e9);
    int n = 0;

    if (read(r->tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
        return -errno;
    while (r->next < r->nsteps && r->steps[r->next]->step - r->first_step <= due) {
        struct agent_event ev = {.kind = AGENT_EVENT_RECORD, .ts_ns = clock_mono_ns()};
        ev.pid = REPLAY_PID_BASE + r->steps[r->next]->rank;
        ev.record.step = r->steps[r->next++];
        r->sink->event(r->sink->ctx, &ev);
        n++;
    }
    if (r->next == r->nsteps && !r->ended) /* the recording ran out: its ranks end */
        n += records_end(r);
    return n;
}

static void records_destroy(void *state)
{
    struct records *r = state;

    if (!r)
        return;
    for (size_t i = 0; i < r->nsteps; i++)
        argus__v1__step_record__free_unpacked(r->steps[i], NULL);
    for (size_t i = 0; i < r->nres; i++)
        argus__v1__resource__free_unpacked(r->res[i], NULL);
    for (size_t i = 0; i < r->nnames; i++)
        argus__v1__name_entry__free_unpacked(r->names[i], NULL);
    free(r->steps);
    free(r->res);
    free(r->names);
    if (r->tfd >= 0)
        close(r->tfd);
    free(r);
}

const struct source_ops source_records_ops = {
    .name = "records",
    .supported = records_supported,
    .create = records_create,
    .start = records_start,
    .fd = records_fd,
    .dispatch = records_dispatch,
    .destroy = records_destroy,
};
