/* argusctl import-kineto: see import.h. */
#include "tools/argusctl/import.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sources/kineto.h"
#include "agent/steps/summarize.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/frame.h"
#include "common/name_id.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "tools/argusctl/channel.h"
#include "tools/argusctl/target.h"
#include "proto/argus.pb-c.h"

#define IMPORT_STEPS_PER_BATCH 16
#define IMPORT_MAX_NAME 4096 /* the collector's ingest name limit */

enum { IMPORT_OK = 0, IMPORT_USAGE = 2, IMPORT_UNREACHABLE = 3, IMPORT_ERROR = 4 };

struct import_config {
    char *collector, *collectors, *collectors_dns;
    bool plaintext;
    char *tls_ca, *tls_cert, *tls_key;
    char *job;
    int64_t rank;
    uint64_t timeout;
    char *node;
};

#define IMPORT_OPT(key, type, field, def, lo, hi, help)                                            \
    CONFIG_OPTION(struct import_config, key, type, field, def, lo, hi, help, NULL, NULL, false)

static const struct config_option import_options[] = {
    CTL_CONNECT_OPTIONS(struct import_config),
    IMPORT_OPT("job", CONFIG_STRING, job, "", 0, 0, "job id the traces are stored under"),
    IMPORT_OPT("rank", CONFIG_INT, rank, "-1", -1, 1e9,
               "rank of a trace without distributedInfo.rank (+ the file's index); -1: none"),
    IMPORT_OPT("timeout", CONFIG_DURATION, timeout, "30s", 0.001, 3600,
               "how long to wait for the collector's ack of each file"),
    IMPORT_OPT("node", CONFIG_STRING, node, "", 0, 0,
               "node name of the imported ranks (empty: import:HOSTNAME)"),
};

static const struct config_table import_table = {
    .program = "argusctl import-kineto",
    .summary = "import PyTorch profiler (Kineto) traces into a collector",
    .usage = "Usage: argusctl import-kineto FILE... --job J [--rank R] [--collector ADDR | "
             "--collectors LIST]\n"
             "With a set, every file goes to the job's primary and standby.\n"
             "Each FILE (gzip'd or plain JSON) is one rank of job J.\n",
    .options = import_options,
    .count = sizeof(import_options) / sizeof(import_options[0]),
    .positional = true,
};

/* Where a file goes: the collector, or the job's primary and standby of
 * a set (each gets every batch, as an agent's stream would). */
struct import_dest {
    struct rpc_channel *ch[2];
    const char *name[2];
    size_t n;
};

/* One file's import. */
struct import_file {
    const struct import_config *cfg;
    const char *path;
    struct kineto_trace *t;
    uint32_t rank, world;
    char agent_id[256], node[128];
    size_t *order; /* span indexes by step */
    size_t *first; /* first[s]..first[s + 1]: the spans of step s in order */
    bool *name_sent, *phase_sent;
};

/* A kernel or phase name as the collector accepts it: at most
 * IMPORT_MAX_NAME bytes (a longer one is cut; its id is of the cut text). */
static const char *import_name(const char *name, char *buf, size_t len)
{
    if (strlen(name) <= IMPORT_MAX_NAME)
        return name;
    snprintf(buf, len, "%.*s", IMPORT_MAX_NAME, name);
    return buf;
}

static uint64_t import_name_id(const char *name)
{
    static char buf[IMPORT_MAX_NAME + 1];

    return name_id(import_name(name, buf, sizeof(buf)));
}

/* Spans ordered by step (a counting sort): first[] and order[]. */
static int import_index(struct import_file *f)
{
    const struct kineto_trace *t = f->t;
    size_t *at;

    f->first = calloc(t->n_steps + 2, sizeof(*f->first));
    f->order = malloc((t->n_spans ? t->n_spans : 1) * sizeof(*f->order));
    at = calloc(t->n_steps + 1, sizeof(*at));
    if (!f->first || !f->order || !at) {
        free(at);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].step >= 0)
            f->first[t->spans[i].step + 1]++;
    for (size_t s = 0; s < t->n_steps; s++)
        f->first[s + 1] += f->first[s];
    for (size_t s = 0; s < t->n_steps; s++)
        at[s] = f->first[s];
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].step >= 0)
            f->order[at[t->spans[i].step]++] = i;
    free(at);
    return 0;
}

/* The phases of step s into rec (host annotations, else GPU ones). */
static int import_phases(const struct import_file *f, size_t s, Argus__V1__StepRecord *rec)
{
    const struct kineto_trace *t = f->t;
    bool host = false;

    for (size_t i = 0; i < t->n_annotations; i++)
        if (t->annotations[i].top && t->annotations[i].step == (int32_t)s && !t->annotations[i].gpu)
            host = true;
    for (size_t i = 0; i < t->n_annotations; i++) {
        const struct kineto_annotation *a = &t->annotations[i];
        uint64_t id = import_name_id(t->phase_names[a->name]);
        uint64_t start = a->ts_ns > t->steps[s].ts_ns ? a->ts_ns - t->steps[s].ts_ns : 0;
        size_t k;

        if (!a->top || a->step != (int32_t)s || a->gpu == host)
            continue;
        for (k = 0; k < rec->n_phases && rec->phases[k]->name_id != id; k++)
            ;
        if (k == rec->n_phases) {
            Argus__V1__Phase *ph = malloc(sizeof(*ph));
            Argus__V1__Phase **arr = realloc(rec->phases, (k + 1) * sizeof(*arr));

            if (arr)
                rec->phases = arr;
            if (!ph || !arr) {
                free(ph);
                return -ENOMEM;
            }
            argus__v1__phase__init(ph);
            ph->name_id = id;
            ph->start_ns = start;
            rec->phases[rec->n_phases++] = ph;
        }
        rec->phases[k]->duration_ns += a->dur_ns;
        if (start < rec->phases[k]->start_ns)
            rec->phases[k]->start_ns = start;
    }
    return 0;
}

/* Step s of the trace as a record: times, phases, summarized kernels. */
static int import_record(struct import_file *f, struct summarizer *sum, size_t s,
                         Argus__V1__StepRecord *rec)
{
    const struct kineto_trace *t = f->t;

    argus__v1__step_record__init(rec);
    rec->job = f->cfg->job;
    rec->rank = f->rank;
    rec->step = t->steps[s].number;
    rec->start_unix_ns = t->base_ns + t->steps[s].ts_ns;
    rec->duration_ns = t->steps[s].dur_ns;
    rec->sampled = true;
    rec->source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_IMPORTED;
    for (size_t k = f->first[s]; k < f->first[s + 1]; k++) {
        const struct kineto_span *sp = &t->spans[f->order[k]];

        summarizer_add_shape(sum, import_name_id(t->names[sp->name]), sp->stream, sp->dur_ns,
                             sp->shape);
    }
    if (summarizer_finish(sum, rec) < 0)
        return -ENOMEM;
    return import_phases(f, s, rec);
}

static void import_record_free(Argus__V1__StepRecord *rec)
{
    summarizer_free_groups(rec);
    for (size_t k = 0; k < rec->n_phases; k++)
        free(rec->phases[k]);
    free(rec->phases);
    rec->phases = NULL;
    rec->n_phases = 0;
}

/* Add a name entry to b unless sent before. */
static int import_add_name(struct import_file *f, Argus__V1__Batch *b, const char *name, bool *sent)
{
    static char buf[IMPORT_MAX_NAME + 1];
    Argus__V1__NameEntry *n, **arr;

    if (*sent)
        return 0;
    n = malloc(sizeof(*n));
    arr = realloc(b->names, (b->n_names + 1) * sizeof(*arr));
    if (arr)
        b->names = arr;
    if (!n || !arr) {
        free(n);
        return -ENOMEM;
    }
    argus__v1__name_entry__init(n);
    n->job = f->cfg->job;
    n->name = strdup(import_name(name, buf, sizeof(buf)));
    if (!n->name) {
        free(n);
        return -ENOMEM;
    }
    n->id = name_id(n->name);
    b->names[b->n_names++] = n;
    *sent = true;
    return 0;
}

/* The names the records of b use and the collector has not been sent. */
static int import_batch_names(struct import_file *f, Argus__V1__Batch *b, size_t from, size_t to)
{
    const struct kineto_trace *t = f->t;
    int r = 0;

    for (size_t k = f->first[from]; k < f->first[to] && r == 0; k++) {
        uint32_t n = t->spans[f->order[k]].name;
        r = import_add_name(f, b, t->names[n], &f->name_sent[n]);
    }
    for (size_t i = 0; i < t->n_annotations && r == 0; i++) {
        const struct kineto_annotation *a = &t->annotations[i];
        if (a->step >= (int32_t)from && a->step < (int32_t)to)
            r = import_add_name(f, b, t->phase_names[a->name], &f->phase_sent[a->name]);
    }
    return r;
}

static void import_batch_free(Argus__V1__Batch *b)
{
    for (size_t i = 0; i < b->n_names; i++) {
        free(b->names[i]->name);
        free(b->names[i]);
    }
    free(b->names);
    for (size_t i = 0; i < b->n_steps; i++)
        import_record_free(b->steps[i]);
}

/* The Push stream of one file and the highest seq the collector acked. */
struct import_stream {
    struct rpc_stream *st;
    uint64_t epoch, acked;
};

/* Wait for the next event that is not NONE, up to the deadline; an ack on
 * the way is recorded whatever the caller waits for. */
static int import_wait(struct import_stream *is, uint64_t deadline, struct rpc_stream_event *ev)
{
    while (clock_mono_ns() < deadline) {
        rpc_stream_poll(is->st, 200, ev);
        if (ev->kind == RPC_STREAM_MESSAGE) {
            Argus__V1__Ack *ack = argus__v1__ack__unpack(NULL, ev->len, ev->data);
            if (ack && ack->epoch == is->epoch && ack->seq > is->acked)
                is->acked = ack->seq;
            if (ack)
                argus__v1__ack__free_unpacked(ack, NULL);
        }
        if (ev->kind != RPC_STREAM_NONE)
            return 0;
    }
    return -ETIMEDOUT;
}

static int import_closed(const struct import_file *f, const struct rpc_stream_event *ev)
{
    fprintf(stderr, "argusctl: %s: the collector refused the import: %s\n", f->path,
            ev->message[0] ? ev->message : "stream closed");
    return -EPIPE;
}

/* Send one packed batch and wait until it is written. */
static int import_send(struct import_file *f, struct import_stream *is, Argus__V1__Batch *b,
                       uint64_t deadline)
{
    struct rpc_stream_event ev;
    size_t len = argus__v1__batch__get_packed_size(b), flen;
    uint8_t *raw = malloc(len ? len : 1);
    void *frame = NULL;
    int r;

    if (!raw)
        return -ENOMEM;
    argus__v1__batch__pack(b, raw);
    r = frame_encode(raw, len, FRAME_CODEC_LZ4, &frame, &flen);
    free(raw);
    if (r == 0)
        r = rpc_stream_send(is->st, frame, flen);
    free(frame);
    while (r == 0) {
        if ((r = import_wait(is, deadline, &ev)) < 0)
            break;
        if (ev.kind == RPC_STREAM_SENT)
            return 0;
        if (ev.kind == RPC_STREAM_CLOSED)
            return import_closed(f, &ev);
    }
    return r;
}

/* Wait for the ack of seq. */
static int import_ack(struct import_file *f, struct import_stream *is, uint64_t seq,
                      uint64_t deadline)
{
    struct rpc_stream_event ev;

    while (is->acked < seq) {
        if (import_wait(is, deadline, &ev) < 0)
            return -ETIMEDOUT;
        if (ev.kind == RPC_STREAM_CLOSED && is->acked < seq)
            return import_closed(f, &ev);
    }
    return 0;
}

/* The rank's Resource, sent with the first batch. */
static void import_resource(const struct import_file *f, Argus__V1__Resource *res)
{
    argus__v1__resource__init(res);
    res->job = f->cfg->job;
    res->rank = f->rank;
    res->world_size = f->world;
    res->node = (char *)f->node;
    res->gpu = f->t->n_spans ? f->t->spans[0].device : -1;
    res->gpu_uuid = "";
}

/* Every step of the file to the collector, IMPORT_STEPS_PER_BATCH a batch. */
static int import_push(struct import_file *f, struct rpc_channel *ch)
{
    const struct kineto_trace *t = f->t;
    uint64_t seq = 0, deadline = clock_mono_ns() + f->cfg->timeout;
    struct summarizer *sum = summarizer_new(NULL);
    struct import_stream is = {rpc_stream_open(ch, RPC_INGEST_PUSH, false), clock_real_ns(), 0};
    Argus__V1__StepRecord recs[IMPORT_STEPS_PER_BATCH], *recp[IMPORT_STEPS_PER_BATCH];
    Argus__V1__Resource res, *resp = &res;
    int r = sum && is.st ? 0 : -ENOMEM;

    import_resource(f, &res);
    for (size_t from = 0; r == 0 && (from < t->n_steps || seq == 0);
         from += IMPORT_STEPS_PER_BATCH) {
        size_t to =
            from + IMPORT_STEPS_PER_BATCH < t->n_steps ? from + IMPORT_STEPS_PER_BATCH : t->n_steps;
        Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;

        b.agent_id = f->agent_id;
        b.epoch = is.epoch;
        b.seq = ++seq;
        b.created_unix_ns = clock_real_ns();
        b.steps = recp;
        if (seq == 1) {
            b.resources = &resp;
            b.n_resources = 1;
        }
        for (size_t s = from; s < to && r == 0; s++) {
            recp[s - from] = &recs[s - from];
            r = import_record(f, sum, s, &recs[s - from]);
            b.n_steps++;
        }
        if (r == 0)
            r = import_batch_names(f, &b, from, to);
        if (r == 0)
            r = import_send(f, &is, &b, deadline);
        import_batch_free(&b);
    }
    if (r == 0)
        r = import_ack(f, &is, seq, deadline);
    if (r == 0)
        rpc_stream_close_send(is.st);
    rpc_stream_free(is.st);
    summarizer_free(sum);
    return r;
}

/* Rank, world size, ids and the step index of one read trace. */
static int import_prepare(struct import_file *f, int index, int nfiles)
{
    const struct kineto_trace *t = f->t;
    char host[64] = "localhost", *copy = strdup(f->path);

    if (t->rank < 0 && f->cfg->rank < 0) {
        fprintf(stderr,
                "argusctl: %s: the trace has no distributedInfo.rank; pass --rank R (file i is "
                "rank R + i)\n",
                f->path);
        free(copy);
        return -EINVAL;
    }
    f->rank = t->rank >= 0 ? (uint32_t)t->rank : (uint32_t)(f->cfg->rank + index);
    f->world = t->world_size > 0 ? (uint32_t)t->world_size : (uint32_t)nfiles;
    if (f->world <= f->rank)
        f->world = f->rank + 1;
    gethostname(host, sizeof(host) - 1);
    snprintf(f->agent_id, sizeof(f->agent_id), "import:%s:%.160s", host,
             copy ? basename(copy) : "trace");
    free(copy);
    if (*f->cfg->node)
        snprintf(f->node, sizeof(f->node), "%s", f->cfg->node);
    else
        snprintf(f->node, sizeof(f->node), "import:%s", host);
    f->name_sent = calloc(t->n_names + 1, sizeof(bool));
    f->phase_sent = calloc(t->n_phase_names + 1, sizeof(bool));
    if (!f->name_sent || !f->phase_sent || import_index(f) < 0)
        return -ENOMEM;
    return 0;
}

static void import_print(const struct import_file *f)
{
    const struct kineto_trace *t = f->t;
    size_t shown = 0;

    printf("%s: rank %" PRIu32 "/%" PRIu32 ", %zu step%s", f->path, f->rank, f->world, t->n_steps,
           t->n_steps == 1 ? "" : "s");
    if (t->n_steps)
        printf(" (%" PRIu64 "-%" PRIu64 ")", t->steps[0].number, t->steps[t->n_steps - 1].number);
    printf(", %zu kernels, ", t->n_spans);
    for (size_t i = 0; i < t->n_phase_names; i++) { /* the phases some step carries */
        size_t k = 0;
        while (k < t->n_annotations && !(t->annotations[k].name == i && t->annotations[k].top))
            k++;
        if (k < t->n_annotations)
            printf("%s%s", shown++ ? " " : "phases: ", t->phase_names[i]);
    }
    if (!shown)
        printf("no phase annotations in this trace (steps carry no phases)");
    printf(" -> job %s\n", f->cfg->job);
}

/* Every step of the file to each destination (names again on each stream). */
static int import_push_all(struct import_file *f, const struct import_dest *dest, size_t *failed)
{
    int r = 0;

    for (size_t d = 0; r == 0 && d < dest->n; d++) {
        memset(f->name_sent, 0, (f->t->n_names + 1) * sizeof(bool));
        memset(f->phase_sent, 0, (f->t->n_phase_names + 1) * sizeof(bool));
        r = import_push(f, dest->ch[d]);
        *failed = d;
    }
    return r;
}

/* Read, convert and send one file. Returns an exit code. */
static int import_one(const struct import_config *cfg, const struct import_dest *dest,
                      const char *path, int index, int nfiles)
{
    struct import_file f = {.cfg = cfg, .path = path};
    char err[512] = "";
    int rc = kineto_read(path, NULL, &f.t, err, sizeof(err)), code = IMPORT_OK, r;
    size_t failed = 0;

    if (!f.t) {
        fprintf(stderr, "argusctl: %s: %s\n", path, err);
        return IMPORT_ERROR;
    }
    if (rc < 0) {
        fprintf(stderr,
                "argusctl: %s: %s; importing the %zu whole steps read before byte %" PRIu64 "\n",
                path, err, f.t->n_steps, f.t->error_offset);
        code = IMPORT_ERROR;
    }
    r = import_prepare(&f, index, nfiles);
    if (r == 0 && (r = import_push_all(&f, dest, &failed)) == 0)
        import_print(&f);
    else if (r == -ETIMEDOUT)
        fprintf(stderr, "argusctl: collector %s unreachable: no ack within the timeout\n",
                dest->name[failed]);
    else if (r == -ENOMEM)
        fprintf(stderr, "argusctl: %s: out of memory\n", path);
    if (r < 0)
        code = r == -ETIMEDOUT ? IMPORT_UNREACHABLE : r == -EINVAL ? IMPORT_USAGE : IMPORT_ERROR;
    free(f.order);
    free(f.first);
    free(f.name_sent);
    free(f.phase_sent);
    kineto_free(f.t);
    return code;
}

/* The job's destinations in t: its primary and standby in a set. */
static void import_destinations(const struct ctl_target *t, const char *job,
                                struct import_dest *dest)
{
    const struct collector_set *set = ctl_target_set(t);
    size_t at[2] = {0, 0};

    dest->n = ctl_target_is_set(t) ? collector_set_place(set, job, at) : 1;
    for (size_t d = 0; d < dest->n; d++) {
        dest->ch[d] = ctl_target_channel(t, at[d]);
        dest->name[d] = set->member[at[d]].name;
    }
}

/* The arguments other than the command word into args (at most 255). */
static int import_args(int argc, char **argv, char **args)
{
    int n = 0;

    if (argc > 255) {
        fprintf(stderr, "argusctl: import-kineto: more than 254 arguments\n");
        return -1;
    }
    for (int i = 0; i < argc; i++) /* the command word is not a FILE */
        if (i == 0 || strcmp(argv[i], "import-kineto") != 0 || n < i)
            args[n++] = argv[i];
    args[n] = NULL;
    return n;
}

int import_kineto_main(int argc, char **argv)
{
    struct import_config cfg = {0};
    struct config_result res;
    struct collector_address addr;
    struct ctl_target *target = NULL;
    struct import_dest dest = {0};
    char *args[256];
    int n = import_args(argc, argv, args), code = IMPORT_OK;

    if (n < 0)
        return IMPORT_USAGE;
    if (config_load(&import_table, &cfg, n, args, &res) < 0) {
        fprintf(stderr, "argusctl: import-kineto: %s\n", res.error);
        config_free(&import_table, &cfg);
        return IMPORT_USAGE;
    }
    if (res.help) {
        config_usage(&import_table, stdout);
        config_free(&import_table, &cfg);
        return IMPORT_OK;
    }
    if (res.npositional == 0 || !*cfg.job) {
        fprintf(stderr, "argusctl: import-kineto needs %s\n",
                res.npositional ? "--job J" : "at least one trace FILE");
        config_free(&import_table, &cfg);
        return IMPORT_USAGE;
    }
    if (ctl_address(cfg.collector, cfg.collectors, cfg.collectors_dns, &addr) < 0) {
        config_free(&import_table, &cfg);
        return IMPORT_USAGE;
    }
    code = ctl_target_open(
        &addr, &(struct ctl_tls){cfg.plaintext, cfg.tls_ca, cfg.tls_cert, cfg.tls_key}, &target);
    if (target)
        import_destinations(target, cfg.job, &dest);
    for (int i = 0; target && i < res.npositional; i++) {
        int r = import_one(&cfg, &dest, res.positional[i], i, res.npositional);

        if (r > code)
            code = r;
    }
    ctl_target_free(target);
    config_free(&import_table, &cfg);
    return code;
}
