/* argusctl's human tables of the jobs, steps and ranks answers (the same
 * from one collector or the merge of a set's members). Each prints to
 * stdout; job is the --job asked for ("" when none). */
#ifndef ARGUS_ARGUSCTL_TABLES_H
#define ARGUS_ARGUSCTL_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* A JobsResponse: one line per job. */
void tables_jobs(const ProtobufCMessage *m, const char *job);

/* A StepsResponse: one line per step record, phases by name. */
void tables_steps(const ProtobufCMessage *m, const char *job);

/* A RanksResponse: one line per rank. */
void tables_ranks(const ProtobufCMessage *m, const char *job);

/* pbjson_resolve_fn over a StepsResponse (ctx): the name of id, or NULL. */
const char *tables_resolve(void *ctx, uint64_t id);

/* ns as RFC 3339 into buf, "-" for 0. Returns buf or "-". */
const char *tables_time(uint64_t ns, char *buf, size_t len);

#endif
