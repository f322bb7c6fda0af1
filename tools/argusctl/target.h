/* Where argusctl's calls go: one collector, or every member of a collector
 * set (collector_address.h says which). With a set, a query goes to every
 * member at once (each bounded by the timeout), since a job's history may
 * be on any of them (merge.h); the members that did not answer are named on
 * stderr, and the answer is the merge of those that did. */
#ifndef ARGUS_ARGUSCTL_TARGET_H
#define ARGUS_ARGUSCTL_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "common/collector_set.h"
#include "tools/argusctl/channel.h"
#include "tools/argusctl/collector_address.h"

struct ctl_target;

/* What one member answered. */
struct ctl_answer {
    int code;               /* enum ctl_exit: CTL_OK, CTL_NOT_FOUND, CTL_UNREACHABLE, ... */
    int status;             /* the gRPC status */
    char message[256];      /* its details ("" when none) */
    ProtobufCMessage *resp; /* on CTL_OK: the answer (ctl_answers_free frees it) */
};

/* Open channels to a's collector or to every member of a's set (a DNS set
 * is resolved now). Returns 0 and *out, or an exit code (enum ctl_exit)
 * after printing why. */
int ctl_target_open(const struct collector_address *a, const struct ctl_tls *tls,
                    struct ctl_target **out);

/* NULL is fine. */
void ctl_target_free(struct ctl_target *t);

/* The set (a single collector is a set of one named by its address). */
const struct collector_set *ctl_target_set(const struct ctl_target *t);

/* True when the target was given as a set. */
bool ctl_target_is_set(const struct ctl_target *t);

/* Call every member in parallel; answers[i] is member i's (the array holds
 * ctl_target_set(t)->n entries). */
void ctl_target_call_all(struct ctl_target *t, const char *method, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *type, uint64_t timeout_ms,
                         struct ctl_answer *answers);

/* Free the n answers' messages. */
void ctl_answers_free(struct ctl_answer *answers, size_t n);

/* The call every command makes: on CTL_OK *resp is the answer (one
 * collector's, or the merge of every member that had it; caller frees with
 * protobuf_c_message_free_unpacked). Else an exit code, the reason printed
 * unless quiet. With a set: CTL_OK when one member had it, CTL_NOT_FOUND
 * when those that answered did not, CTL_UNREACHABLE when none answered. */
int ctl_target_call(struct ctl_target *t, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *type, uint64_t timeout_ms, bool quiet,
                    ProtobufCMessage **resp);

/* The channel of member i (for calls that go to chosen members). */
struct rpc_channel *ctl_target_channel(const struct ctl_target *t, size_t i);

#endif
