/* argusctl's calls to one collector or a set: see target.h. */
#include "tools/argusctl/target.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rpc.h"
#include "common/tls.h"
#include "common/tls_why.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/merge.h"

struct ctl_target {
    struct collector_set set;
    bool is_set;
    bool fallback; /* the default address: a failure gets the hint */
    char source[320];
    struct rpc_channel *ch[COLLECTOR_SET_MAX];
    struct tls_pem pem; /* our credentials, for tls_why (tls: loaded) */
    bool tls;
};

/* The longest a failed call's TLS diagnosis waits on each network step. */
#define TARGET_WHY_MS 2000u

/* The members of a's set (or its one address) into t->set. */
static int target_members(const struct collector_address *a, struct ctl_target *t)
{
    char err[512];
    int r = 0;

    if (a->dns[0]) {
        r = collector_set_resolve(a->dns, &t->set, err, sizeof(err));
        if (r < 0)
            fprintf(stderr, "argusctl: collector set %s (from %s): %s\n", a->dns, a->source, err);
        return r < 0 ? (r == -EINVAL ? CTL_USAGE : CTL_UNREACHABLE) : CTL_OK;
    }
    if (a->list[0]) {
        r = collector_set_parse(a->list, &t->set, err, sizeof(err));
        if (r < 0)
            fprintf(stderr, "argusctl: %s: %s\n", a->source, err);
        return r < 0 ? CTL_USAGE : CTL_OK;
    }
    t->set.n = 1;
    snprintf(t->set.member[0].name, sizeof(t->set.member[0].name), "%s", a->address);
    snprintf(t->set.member[0].address, sizeof(t->set.member[0].address), "%s", a->address);
    return CTL_OK;
}

int ctl_target_open(const struct collector_address *a, const struct ctl_tls *tls,
                    struct ctl_target **out)
{
    struct ctl_target *t = calloc(1, sizeof(*t));
    int r;

    *out = NULL;
    if (!t) {
        fprintf(stderr, "argusctl: out of memory\n");
        return CTL_ERROR;
    }
    t->is_set = collector_address_is_set(a);
    t->fallback = a->fallback;
    snprintf(t->source, sizeof(t->source), "%s", a->source);
    r = target_members(a, t);
    if (r == CTL_OK) {
        int load = ctl_tls_load(tls, &t->pem);
        t->tls = load == 1;
        r = load < 0 ? CTL_USAGE : CTL_OK;
    }
    for (size_t i = 0; r == CTL_OK && i < t->set.n; i++)
        if (!(t->ch[i] = ctl_channel_open(t->set.member[i].address, t->tls ? &t->pem : NULL)))
            r = CTL_ERROR;
    if (r != CTL_OK) {
        ctl_target_free(t);
        return r;
    }
    *out = t;
    return CTL_OK;
}

void ctl_target_free(struct ctl_target *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->set.n; i++)
        rpc_channel_free(t->ch[i]);
    tls_pem_free(&t->pem);
    free(t);
}

const struct collector_set *ctl_target_set(const struct ctl_target *t)
{
    return &t->set;
}

bool ctl_target_is_set(const struct ctl_target *t)
{
    return t->is_set;
}

struct rpc_channel *ctl_target_channel(const struct ctl_target *t, size_t i)
{
    return i < t->set.n ? t->ch[i] : NULL;
}

/* One member's call, on a thread of its own. */
struct target_job {
    struct rpc_channel *ch;
    const char *address;
    const struct tls_pem *pem; /* NULL: plaintext */
    const char *method;
    const ProtobufCMessage *req;
    const ProtobufCMessageDescriptor *type;
    uint64_t timeout_ms;
    struct ctl_answer *answer;
    pthread_t thread;
    bool started;
};

/* A call that failed UNAVAILABLE under TLS: when the collector is there and
 * the handshake is what fails, CTL_TLS with the reason (tls_why.h) in a. */
static void target_why(const struct target_job *j, struct ctl_answer *a)
{
    uint64_t ms = j->timeout_ms < TARGET_WHY_MS ? j->timeout_ms : TARGET_WHY_MS;
    char why[sizeof(a->message)];

    if (!j->pem || a->status != RPC_UNAVAILABLE)
        return;
    if (tls_why_diagnose(j->address, j->pem, (int)ms, why, sizeof(why)) == TLS_WHY_FOUND) {
        a->code = CTL_TLS;
        snprintf(a->message, sizeof(a->message), "%s", why);
    }
}

/* A role refused: the collector's message names the certificate's identity,
 * ours adds the file that holds it. */
static void target_name_cert(const struct target_job *j, struct ctl_answer *a)
{
    size_t n = strlen(a->message);

    if (j->pem && a->status == RPC_PERMISSION_DENIED && j->pem->cert_file[0])
        snprintf(a->message + n, sizeof(a->message) - n, " (our tls.cert %s)", j->pem->cert_file);
}

static void *target_call_one(void *arg)
{
    struct target_job *j = arg;
    struct ctl_answer *a = j->answer;
    int r = rpc_call(j->ch, j->method, j->req, j->type, j->timeout_ms, &a->resp, &a->status,
                     a->message, sizeof(a->message));

    if (r == -ETIMEDOUT || a->status == RPC_UNAVAILABLE || a->status == RPC_DEADLINE_EXCEEDED)
        a->code = CTL_UNREACHABLE;
    else if (r < 0 || a->status != RPC_OK)
        a->code = a->status == RPC_NOT_FOUND          ? CTL_NOT_FOUND
                  : a->status == RPC_INVALID_ARGUMENT ? CTL_USAGE
                                                      : CTL_ERROR;
    else
        a->code = CTL_OK;
    if (a->code == CTL_UNREACHABLE)
        target_why(j, a);
    else
        target_name_cert(j, a);
    if (a->code == CTL_UNREACHABLE && !a->message[0])
        snprintf(a->message, sizeof(a->message), "timed out");
    if (a->code != CTL_OK)
        a->resp = NULL;
    return NULL;
}

void ctl_target_call_all(struct ctl_target *t, const char *method, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *type, uint64_t timeout_ms,
                         struct ctl_answer *answers)
{
    struct target_job jobs[COLLECTOR_SET_MAX];

    for (size_t i = 0; i < t->set.n; i++) {
        memset(&answers[i], 0, sizeof(answers[i]));
        jobs[i] = (struct target_job){.ch = t->ch[i],
                                      .address = t->set.member[i].address,
                                      .pem = t->tls ? &t->pem : NULL,
                                      .method = method,
                                      .req = req,
                                      .type = type,
                                      .timeout_ms = timeout_ms,
                                      .answer = &answers[i]};
        if (t->set.n > 1)
            jobs[i].started = pthread_create(&jobs[i].thread, NULL, target_call_one, &jobs[i]) == 0;
        if (!jobs[i].started) /* one member, or no thread to spare: here */
            target_call_one(&jobs[i]);
    }
    for (size_t i = 0; i < t->set.n; i++)
        if (jobs[i].started)
            pthread_join(jobs[i].thread, NULL);
}

void ctl_answers_free(struct ctl_answer *answers, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (answers[i].resp)
            protobuf_c_message_free_unpacked(answers[i].resp, NULL);
        answers[i].resp = NULL;
    }
}

/* Say why a failed call failed (one collector): as argusctl always did. */
static void target_say(const struct ctl_target *t, const struct ctl_answer *a)
{
    if (a->code == CTL_UNREACHABLE) {
        fprintf(stderr, "argusctl: collector %s (from %s) unreachable: %s\n",
                t->set.member[0].address, t->source, a->message);
        if (t->fallback)
            fprintf(stderr, "argusctl: %s\n", collector_address_hint());
    } else if (a->code == CTL_TLS) {
        fprintf(stderr, "argusctl: collector %s (from %s): TLS handshake refused: %s\n",
                t->set.member[0].address, t->source, a->message);
    } else {
        fprintf(stderr, "argusctl: %s\n", a->message[0] ? a->message : "call failed");
    }
}

/* The answers of a set as one: see ctl_target_call. */
static int target_join(const struct ctl_target *t, struct ctl_answer *answers,
                       const ProtobufCMessageDescriptor *type, bool quiet, ProtobufCMessage **resp)
{
    ProtobufCMessage *ok[COLLECTOR_SET_MAX];
    const struct ctl_answer *worst = NULL;
    size_t n = 0, tls = 0;

    for (size_t i = 0; i < t->set.n; i++) {
        const struct ctl_answer *a = &answers[i];
        if (a->code == CTL_OK)
            ok[n++] = a->resp;
        else if (a->code == CTL_UNREACHABLE && !quiet)
            fprintf(stderr, "argusctl: collector %s (%s) did not answer: %s\n",
                    t->set.member[i].name, t->set.member[i].address, a->message);
        else if (a->code == CTL_TLS && ++tls && !quiet)
            fprintf(stderr, "argusctl: collector %s (%s): TLS handshake refused: %s\n",
                    t->set.member[i].name, t->set.member[i].address, a->message);
        else if (a->code != CTL_UNREACHABLE && a->code != CTL_TLS &&
                 (!worst || a->code > worst->code))
            worst = a; /* NOT_FOUND below USAGE below ERROR */
    }
    if (n) {
        *resp = merge_answers(type, ok, n);
        if (!*resp && !quiet)
            fprintf(stderr, "argusctl: out of memory merging the members' answers\n");
        return *resp ? CTL_OK : CTL_ERROR;
    }
    if (worst) {
        if (!quiet)
            fprintf(stderr, "argusctl: %s%s\n", worst->message[0] ? worst->message : "call failed",
                    worst->code == CTL_NOT_FOUND ? " (nor in any other member of the set)" : "");
        return worst->code;
    }
    if (!quiet)
        fprintf(stderr, "argusctl: no member of the collector set (from %s) answered\n", t->source);
    return tls ? CTL_TLS : CTL_UNREACHABLE;
}

int ctl_target_call(struct ctl_target *t, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *type, uint64_t timeout_ms, bool quiet,
                    ProtobufCMessage **resp)
{
    struct ctl_answer answers[COLLECTOR_SET_MAX];
    int r;

    *resp = NULL;
    ctl_target_call_all(t, method, req, type, timeout_ms, answers);
    if (!t->is_set || t->set.n == 1) {
        r = answers[0].code;
        if (r == CTL_OK)
            *resp = answers[0].resp, answers[0].resp = NULL;
        else if (!quiet)
            target_say(t, &answers[0]);
        return r;
    }
    r = target_join(t, answers, type, quiet, resp);
    ctl_answers_free(answers, t->set.n);
    return r;
}
