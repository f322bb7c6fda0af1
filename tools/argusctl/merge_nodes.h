/* The merge rule of NodesResponse (merge.h's table has its row): the union
 * of the members' culprit rows by (node, gpu, job), the newest report kept,
 * so a job that a primary and its standby both hold counts once; the
 * earliest window start, the highest fleet.suspect_jobs, truncated when one
 * member was. Pure: no I/O, no logging. */
#ifndef ARGUS_ARGUSCTL_MERGE_NODES_H
#define ARGUS_ARGUSCTL_MERGE_NODES_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* A new NodesResponse merged from the n answers in (each a NodesResponse,
 * none NULL), independent of them (protobuf_c_message_free_unpacked frees
 * it). NULL on allocation failure. */
ProtobufCMessage *merge_nodes(ProtobufCMessage *const *in, size_t n);

#endif
