/* The recorded-step-records file: what argus-sim --record writes and the
 * agent's record replay (replay.records) plays back. A sequence of entries
 * {u8 type, u32 little-endian length, packed message}: type 1 NameEntry,
 * 2 Resource, 3 StepRecord (steps in the order they are to be replayed). */
#ifndef ARGUS_AGENT_RECORDS_H
#define ARGUS_AGENT_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/sources/source.h"
#include "proto/argus.pb-c.h"

enum records_type {
    RECORDS_NAME = 1,
    RECORDS_RESOURCE = 2,
    RECORDS_STEP = 3,
};

#define RECORDS_MAX_ENTRY (16u << 20)

/* Append one message as an entry. Returns 0 or -EIO. */
int records_write(FILE *f, enum records_type type, const ProtobufCMessage *m);

struct records_config {
    const char *path;
    double rate; /* steps per second per rank (> 0) */
};

/* The replay source of a records file: resources become RANK events (pid
 * REPLAY_PID_BASE + rank), names are announced, and every step record is
 * delivered whole (AGENT_EVENT_RECORD) at `rate` steps per second per rank.
 * After the last record every rank ends cleanly (AGENT_EVENT_PROC_EXIT, code
 * 0): the recording ran out, and no process can tell it otherwise.
 * A malformed file is refused at create with the offset of the bad entry. */
extern const struct source_ops source_records_ops;

#endif
