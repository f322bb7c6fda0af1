/* The actions stage: see actions.h. The book (action_book.h) decides, the
 * store keeps, common/hook_exec.h runs. */
#include "collector/actions/actions.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/actions/action_book.h"
#include "common/hook_exec.h"
#include "collector/actions/actions_rules.h"
#include "collector/store/store.h"
#include "common/causes.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pbjson.h"

#define ACTIONS_QUEUE 64 /* reports waiting for the worker */

enum actions_outcome { OUT_DONE, OUT_WOULD_RUN, OUT_FAILED, OUT_STANDING, OUT_BREAKER, OUTCOMES };
static const char *const actions_outcome_names[OUTCOMES] = {"done", "would_run", "failed",
                                                            "standing", "breaker"};

struct actions {
    struct actions_options o;
    struct actions_rules rules;
    int nrules;
    struct store *store;
    pthread_mutex_t lock;     /* the book, the counters, the queue */
    pthread_mutex_t run_lock; /* one hook at a time: a drain and an undo never overlap */
    pthread_cond_t cond;
    struct action_book book;
    uint64_t next_id;
    Argus__V1__Report *queue[ACTIONS_QUEUE];
    size_t qhead, qlen;
    bool stop, started;
    pthread_t worker;
    uint64_t counts[CAUSES_MAX][OUTCOMES];
    uint64_t undone, dropped, store_errors;
    struct log_ratelimit breaker_log;
};

int actions_check(const struct actions_options *o, char *err, size_t errlen)
{
    struct actions_rules *r = malloc(sizeof(*r));
    char why[600];
    int n = r ? actions_rules_parse(o->rules, r, why, sizeof(why)) : -ENOMEM;

    free(r);
    if (n == -EINVAL)
        snprintf(err, errlen, "actions.rules: %s", why);
    else if (n < 0)
        snprintf(err, errlen, "out of memory");
    return n < 0 ? n : 0;
}

/* ---- records and the store ------------------------------------------------- */

static char *actions_strdup(const char *s)
{
    return strdup(s ? s : "");
}

/* A new record of kind, its id the next one; strings copied. NULL on ENOMEM. */
static Argus__V1__Action *actions_record(struct actions *a, const char *kind, const char *node,
                                         int cause, const Argus__V1__Report *r)
{
    Argus__V1__Action *x = malloc(sizeof(*x));
    char id[24];

    if (!x)
        return NULL;
    argus__v1__action__init(x);
    snprintf(id, sizeof(id), "%" PRIu64, a->next_id++);
    x->id = actions_strdup(id);
    x->kind = actions_strdup(kind);
    x->node = actions_strdup(node);
    x->cause = cause;
    x->job = actions_strdup(r ? r->job : "");
    x->report_id = actions_strdup(r ? r->id : "");
    x->created_unix_ns = clock_real_ns();
    x->exit_status = -1;
    x->undo_exit_status = -1;
    x->hook = actions_strdup("");
    x->outcome = actions_strdup("");
    x->output = actions_strdup("");
    x->undo_output = actions_strdup("");
    x->by = actions_strdup("");
    x->reason = actions_strdup("");
    if (!x->id || !x->kind || !x->node || !x->job || !x->report_id || !x->hook || !x->outcome ||
        !x->output || !x->undo_output || !x->by || !x->reason) {
        action_book_free_action(x);
        return NULL;
    }
    return x;
}

/* Replace the string *field with v (copied); on ENOMEM it stays. A record
 * unpacked from the store holds protobuf-c's shared empty string where a
 * field was empty: never freed. */
static void actions_set(char **field, const char *v)
{
    char *c = actions_strdup(v);

    if (c) {
        if (*field != protobuf_c_empty_string)
            free(*field);
        *field = c;
    }
}

/* Store x (NULL: none) and the breaker as one write; a lock held. Errors are
 * counted and logged: the book in memory is still right. */
static void actions_persist(struct actions *a, const Argus__V1__Action *x)
{
    Argus__V1__ActionBreaker br;
    char key[40], err[256];
    const char *keys[2] = {"b", key};
    void *vals[2] = {NULL, NULL};
    size_t lens[2];
    int rc = -ENOMEM;

    action_book_breaker(&a->book, &br);
    lens[0] = argus__v1__action_breaker__get_packed_size(&br);
    lens[1] = x ? argus__v1__action__get_packed_size(x) : 0;
    vals[0] = malloc(lens[0] + 1);
    vals[1] = malloc(lens[1] + 1);
    if (x)
        snprintf(key, sizeof(key), "a:%020" PRIu64, (uint64_t)strtoull(x->id, NULL, 10));
    if (vals[0] && vals[1]) {
        argus__v1__action_breaker__pack(&br, vals[0]);
        if (x)
            argus__v1__action__pack(x, vals[1]);
        rc = store_put_actions(a->store, x ? 2 : 1, keys, (const void *const *)vals, lens, err,
                               sizeof(err));
    }
    if (rc < 0) {
        a->store_errors++;
        log_error("actions", "action %s not stored: %s", x ? x->id : "breaker",
                  rc == -ENOMEM ? "out of memory" : err);
    }
    free(vals[0]);
    free(vals[1]);
}

/* store_alert_fn of the load: "a:" records into the book, "b" the breaker. */
static int actions_load_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct actions *a = ctx;
    Argus__V1__ActionBreaker *br;
    Argus__V1__Action *x;

    if (klen == 1 && *(const char *)key == 'b') {
        if ((br = argus__v1__action_breaker__unpack(NULL, vlen, val))) {
            action_book_set_breaker(&a->book, br);
            argus__v1__action_breaker__free_unpacked(br, NULL);
        }
        return 0;
    }
    x = argus__v1__action__unpack(NULL, vlen, val);
    if (!x)
        return 0; /* a record we cannot read is skipped */
    if (strtoull(x->id, NULL, 10) >= a->next_id)
        a->next_id = strtoull(x->id, NULL, 10) + 1;
    if (action_book_add(&a->book, x) < 0) {
        action_book_free_action(x);
        return -ENOMEM;
    }
    return 0;
}

/* ---- acting ------------------------------------------------------------------ */

/* The hook's environment for x: ARGUS_* in store (kept by the caller until
 * the run ends), NULL-terminated in env. */
static void actions_env(const Argus__V1__Action *x, const char *verb, bool dry_run,
                        const char *summary, char store[][700], const char **env)
{
    const char *vals[][2] = {
        {"ACTION", verb},
        {"NODE", x->node},
        {"JOB", x->job},
        {"CAUSE", causes_get(x->cause)->label},
        {"REPORT_ID", x->report_id},
        {"ACTION_ID", x->id},
        {"DRY_RUN", dry_run ? "1" : "0"},
        {"SUMMARY", summary},
    };
    size_t n = sizeof(vals) / sizeof(vals[0]);

    for (size_t i = 0; i < n; i++) {
        snprintf(store[i], 700, "ARGUS_%s=%s", vals[i][0], vals[i][1] ? vals[i][1] : "");
        env[i] = store[i];
    }
    env[n] = NULL;
}

/* JSON of message m (malloc'd), or NULL. */
static char *actions_json(const ProtobufCMessage *m)
{
    struct json_object *o = pbjson_from_message(m, NULL, NULL);
    char *s = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : NULL;

    json_object_put(o);
    return s;
}

/* Run (or, dry run, describe) the drain of x for report r; fills x. */
static enum actions_outcome actions_run_drain(struct actions *a, Argus__V1__Action *x,
                                              const Argus__V1__Report *r)
{
    char store[8][700], *input;
    const char *env[9];
    struct hook_exec_result res;
    int rc;

    actions_env(x, "drain", x->dry_run, r->summary, store, env);
    if (x->dry_run) {
        snprintf(res.output, sizeof(res.output), "would run %s with ARGUS_ACTION=drain %s %s",
                 x->hook, store[1], store[3]);
        actions_set(&x->outcome, "would_run");
        actions_set(&x->output, res.output);
        return OUT_WOULD_RUN;
    }
    input = actions_json(&r->base);
    pthread_mutex_lock(&a->run_lock);
    rc = hook_exec_run(x->hook, env, input ? input : "{}", a->o.timeout_ns, &res);
    pthread_mutex_unlock(&a->run_lock);
    free(input);
    x->exit_status = res.exit_status;
    actions_set(&x->output, res.output);
    actions_set(&x->outcome, rc == 0 ? "done" : "failed");
    return rc == 0 ? OUT_DONE : OUT_FAILED;
}

/* The breaker trips instead of draining node for cause (a locked). */
static void actions_trip(struct actions *a, const char *node, int cause, const Argus__V1__Report *r,
                         uint64_t now)
{
    char reason[256];
    Argus__V1__Action *x;

    snprintf(reason, sizeof(reason),
             "%u actions within %.0f s: the next, %s of node %s (report %s), was not run; "
             "argusctl actions reset closes the breaker",
             a->book.max, (double)a->book.window_ns / 1e9, causes_get(cause)->label, node, r->id);
    action_book_trip(&a->book, reason, now);
    x = actions_record(a, "breaker_open", node, cause, r);
    if (x) {
        actions_set(&x->outcome, "open");
        actions_set(&x->reason, reason);
    }
    if (x && action_book_add(&a->book, x) < 0) {
        action_book_free_action(x);
        x = NULL;
    }
    actions_persist(a, x);
    log_error("actions", "circuit breaker open: %s", reason);
}

/* Act on the suspect (node, cause) of r: decide, run, record. */
static void actions_act(struct actions *a, const Argus__V1__Report *r, const char *node, int cause)
{
    uint64_t now = clock_real_ns();
    Argus__V1__Action *x = NULL;
    enum actions_outcome out;

    pthread_mutex_lock(&a->lock);
    enum action_verdict v = action_book_decide(&a->book, node, cause, a->o.dry_run, now);
    if (v == ACTION_RUN && (x = actions_record(a, "drain", node, cause, r))) {
        x->dry_run = a->o.dry_run;
        actions_set(&x->hook, a->rules.hook[cause]);
        if (!x->dry_run) {
            action_book_note_run(&a->book, now); /* counted (and stored) before it runs */
            actions_persist(a, NULL);
        }
    } else if (v == ACTION_TRIP) {
        actions_trip(a, node, cause, r, now);
    }
    out = v == ACTION_STANDING ? OUT_STANDING : v == ACTION_RUN ? OUT_FAILED : OUT_BREAKER;
    if (!x)
        a->counts[cause][out]++;
    if (v == ACTION_BREAKER)
        log_ratelimited(&a->breaker_log, LOG_LEVEL_WARN, "actions",
                        "circuit breaker open: not acting on node %s (%s, report %s)", node,
                        causes_get(cause)->label, r->id);
    pthread_mutex_unlock(&a->lock);
    if (!x)
        return;
    out = actions_run_drain(a, x, r);
    log_warn("actions", "%s %s: node %s, cause %s, report %s: %s", x->dry_run ? "dry run" : "drain",
             x->outcome, node, causes_get(cause)->label, r->id, x->output);
    pthread_mutex_lock(&a->lock);
    a->counts[cause][out]++;
    actions_persist(a, x);
    if (action_book_add(&a->book, x) < 0)
        action_book_free_action(x);
    pthread_mutex_unlock(&a->lock);
}

/* Every paging suspect of r with a node and a hook, once per (node, cause). */
static void actions_report(struct actions *a, const Argus__V1__Report *r)
{
    for (size_t i = 0; i < r->n_suspects; i++) {
        const Argus__V1__Suspect *s = r->suspects[i];
        bool seen = false;
        if (!s->pages || !s->node[0] || !causes_known(s->cause) || !a->rules.hook[s->cause][0])
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = r->suspects[k]->pages && r->suspects[k]->cause == s->cause &&
                   strcmp(r->suspects[k]->node, s->node) == 0;
        if (!seen)
            actions_act(a, r, s->node, s->cause);
    }
}

static void *actions_worker(void *arg)
{
    struct actions *a = arg;

    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->stop && a->qlen == 0)
            pthread_cond_wait(&a->cond, &a->lock);
        if (a->stop)
            break;
        Argus__V1__Report *r = a->queue[a->qhead];
        a->qhead = (a->qhead + 1) % ACTIONS_QUEUE;
        a->qlen--;
        pthread_mutex_unlock(&a->lock);
        actions_report(a, r);
        argus__v1__report__free_unpacked(r, NULL);
        pthread_mutex_lock(&a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

void actions_observe(struct actions *a, const Argus__V1__Report *r)
{
    Argus__V1__Report *copy = NULL;
    uint8_t *buf;
    size_t len;

    if (!a || !a->nrules || !r->pages ||
        (a->o.acts_for && !a->o.acts_for(a->o.acts_for_ctx, r->job)))
        return;
    len = argus__v1__report__get_packed_size(r);
    buf = malloc(len + 1);
    if (buf) { /* a deep copy: the worker owns it */
        argus__v1__report__pack(r, buf);
        copy = argus__v1__report__unpack(NULL, len, buf);
        free(buf);
    }
    pthread_mutex_lock(&a->lock);
    if (!copy || a->qlen == ACTIONS_QUEUE) {
        a->dropped++;
    } else {
        a->queue[(a->qhead + a->qlen++) % ACTIONS_QUEUE] = copy;
        copy = NULL;
        pthread_cond_signal(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
    if (copy)
        argus__v1__report__free_unpacked(copy, NULL);
}

/* ---- lifecycle ------------------------------------------------------------- */

int actions_new(struct store *s, const struct actions_options *o, struct actions **out, char *err,
                size_t errlen)
{
    struct actions *a = calloc(1, sizeof(*a));
    int rc;

    *out = NULL;
    if (!a)
        return -ENOMEM;
    a->o = *o;
    a->store = s;
    a->next_id = 1;
    a->breaker_log = (struct log_ratelimit){.interval_ns = 60 * NSEC_PER_SEC, .burst = 1};
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->run_lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    action_book_init(&a->book, o->max, o->window_ns);
    rc = actions_rules_parse(o->rules, &a->rules, err, errlen);
    a->nrules = rc > 0 ? rc : 0;
    if (rc >= 0 && (rc = store_scan_actions(s, NULL, 0, actions_load_one, a)) < 0)
        snprintf(err, errlen, "cannot read the actions family of the store (%s)", strerror(-rc));
    if (rc >= 0 && (rc = -pthread_create(&a->worker, NULL, actions_worker, a)) < 0)
        snprintf(err, errlen, "cannot start the actions worker: %s", strerror(-rc));
    a->started = rc >= 0;
    if (rc < 0) {
        actions_free(a);
        return rc;
    }
    if (a->book.open)
        log_error("actions", "circuit breaker open since the last run: %s", a->book.reason);
    *out = a;
    return 0;
}

void actions_free(struct actions *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
    if (a->started)
        pthread_join(a->worker, NULL);
    for (size_t i = 0; i < a->qlen; i++)
        argus__v1__report__free_unpacked(a->queue[(a->qhead + i) % ACTIONS_QUEUE], NULL);
    action_book_clear(&a->book);
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->run_lock);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* ---- what people ask: list, undo, reset, metrics ------------------------------ */

int actions_list_packed(struct actions *a, uint32_t limit, void **data, size_t *len)
{
    Argus__V1__ActionsResponse resp = ARGUS__V1__ACTIONS_RESPONSE__INIT;
    Argus__V1__ActionBreaker br;
    size_t from;

    pthread_mutex_lock(&a->lock);
    from = limit && a->book.n > limit ? a->book.n - limit : 0;
    resp.actions = a->book.items + from;
    resp.n_actions = a->book.n - from;
    action_book_breaker(&a->book, &br);
    resp.breaker = &br;
    resp.max = a->book.max;
    resp.window_ns = a->book.window_ns;
    resp.dry_run = a->o.dry_run;
    resp.enabled = a->nrules > 0;
    *len = argus__v1__actions_response__get_packed_size(&resp);
    *data = malloc(*len + 1);
    if (*data)
        argus__v1__actions_response__pack(&resp, *data);
    pthread_mutex_unlock(&a->lock);
    return *data ? 0 : -ENOMEM;
}

/* A deep copy of x (argus__v1__action__free_unpacked), or NULL. */
static Argus__V1__Action *actions_copy(const Argus__V1__Action *x)
{
    size_t len = argus__v1__action__get_packed_size(x);
    uint8_t *buf = malloc(len + 1);
    Argus__V1__Action *c = NULL;

    if (buf) {
        argus__v1__action__pack(x, buf);
        c = argus__v1__action__unpack(NULL, len, buf);
    }
    free(buf);
    return c;
}

/* Find id and check it can be undone; a copy of it in *snap. a locked. */
static int actions_undo_find(struct actions *a, const char *id, Argus__V1__Action **snap, char *err,
                             size_t errlen)
{
    Argus__V1__Action *x = action_book_find(&a->book, id);

    if (!x) {
        snprintf(err, errlen, "no action '%.100s' in this collector", id);
        return -ENOENT;
    }
    if (strcmp(x->kind, "drain") != 0 || x->undone ||
        (strcmp(x->outcome, "done") != 0 && strcmp(x->outcome, "would_run") != 0)) {
        snprintf(err, errlen,
                 "action %s is %s: only a drain argus did and has not undone can be "
                 "undone",
                 id,
                 x->undone                  ? "undone already"
                 : strcmp(x->kind, "drain") ? x->kind
                                            : x->outcome);
        return -EPERM;
    }
    *snap = actions_copy(x);
    return *snap ? 0 : -ENOMEM;
}

int actions_undo(struct actions *a, const char *id, const char *by, Argus__V1__Action **out,
                 char *err, size_t errlen)
{
    Argus__V1__Action *snap = NULL, *x;
    struct hook_exec_result res = {.exit_status = -1};
    char store[8][700], *input = NULL;
    const char *env[9];
    int rc;

    *out = NULL;
    pthread_mutex_lock(&a->lock);
    rc = actions_undo_find(a, id, &snap, err, errlen);
    pthread_mutex_unlock(&a->lock);
    if (rc < 0)
        return rc == -ENOMEM ? (snprintf(err, errlen, "out of memory"), rc) : rc;
    if (!snap->dry_run) { /* the hook as recorded: a changed rule still undoes */
        actions_env(snap, "undo", false, "", store, env);
        input = actions_json(&snap->base);
        pthread_mutex_lock(&a->run_lock);
        rc = hook_exec_run(snap->hook, env, input ? input : "{}", a->o.timeout_ns, &res);
        pthread_mutex_unlock(&a->run_lock);
        free(input);
    } else {
        snprintf(res.output, sizeof(res.output), "dry run: nothing was done, nothing run");
    }
    action_book_free_action(snap);
    pthread_mutex_lock(&a->lock);
    x = action_book_find(&a->book, id);
    if (x) {
        x->undone = rc == 0;
        x->undone_unix_ns = rc == 0 ? clock_real_ns() : 0;
        x->undo_exit_status = res.exit_status;
        actions_set(&x->undo_output, res.output);
        actions_set(&x->by, by);
        a->undone += rc == 0;
        actions_persist(a, x);
        *out = actions_copy(x);
    }
    pthread_mutex_unlock(&a->lock);
    log_warn("actions", "undo of action %s (node %s) by %s: %s", id, *out ? (*out)->node : "?",
             by && *by ? by : "(plaintext)", rc == 0 ? "done" : res.output);
    if (rc < 0)
        snprintf(err, errlen, "the undo hook of action %s failed (exit status %d): %s", id,
                 res.exit_status, res.output);
    return rc < 0 ? -EIO : *out ? 0 : -ENOMEM;
}

int actions_reset(struct actions *a, const char *by, const char *note, bool *was_open, char *err,
                  size_t errlen)
{
    Argus__V1__Action *x;
    uint64_t errors;

    pthread_mutex_lock(&a->lock);
    errors = a->store_errors;
    *was_open = action_book_reset(&a->book);
    x = actions_record(a, "breaker_reset", "", 0, NULL);
    if (x) {
        actions_set(&x->outcome, "reset");
        actions_set(&x->by, by);
        actions_set(&x->reason, note);
        if (action_book_add(&a->book, x) < 0) {
            action_book_free_action(x);
            x = NULL;
        }
    }
    actions_persist(a, x);
    errors = a->store_errors - errors;
    pthread_mutex_unlock(&a->lock);
    log_warn("actions", "circuit breaker reset by %s (it was %s)%s%s",
             by && *by ? by : "(plaintext)", *was_open ? "open" : "closed",
             note && *note ? ": " : "", note ? note : "");
    if (errors)
        snprintf(err, errlen,
                 "the breaker is closed but the store did not take it (see the "
                 "collector's log): a restart would open it again");
    return !x ? -ENOMEM : errors ? -EIO : 0;
}

void actions_write_metrics(struct actions *a, struct http_buf *b)
{
    char labels[96];
    bool first = true;

    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    for (int c = 0; c < causes_count(); c++)
        for (int o = 0; o < OUTCOMES; o++) {
            if (!a->rules.hook[c][0] && !a->counts[c][o])
                continue; /* bounded: causes with a hook */
            snprintf(labels, sizeof(labels), "cause=\"%s\",outcome=\"%s\"", causes_get(c)->label,
                     actions_outcome_names[o]);
            if (first)
                http_buf_metric(b, "argus_actions_total", "counter",
                                "action decisions per cause and outcome (done, would_run, failed, "
                                "standing: acted before, breaker: the breaker stopped it)",
                                labels, (double)a->counts[c][o]);
            else
                http_buf_sample(b, "argus_actions_total", labels, (double)a->counts[c][o]);
            first = false;
        }
    http_buf_metric(b, "argus_actions_breaker_open", "gauge",
                    "1 while the actions' circuit breaker is open (argusctl actions reset)", "",
                    a->book.open ? 1 : 0);
    http_buf_metric(b, "argus_actions_undone_total", "counter", "drains undone by argusctl", "",
                    (double)a->undone);
    http_buf_metric(b, "argus_actions_dropped_total", "counter",
                    "paging reports not acted on: the actions queue was full", "",
                    (double)a->dropped);
    http_buf_metric(b, "argus_actions_store_errors_total", "counter",
                    "action records or breaker states the store did not take", "",
                    (double)a->store_errors);
    pthread_mutex_unlock(&a->lock);
}
