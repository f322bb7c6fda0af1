/* argusctl over a collector set: the answers of every member merged into
 * the one answer a single collector would give. A job's history may be on
 * several members (its primary and standby hold the same records; a job
 * that moved keeps its older records where it was), so every query goes to
 * every member and the answers are joined here:
 *   JobsResponse        union by job id; the entry seen last (newest
 *                       last_seen_unix_ns, then most rank-steps) wins
 *   StepsResponse       union by (step, rank), names by id; truncated when
 *                       one member was, cut at the lowest point a truncated
 *                       member reached (asking again from there misses none)
 *   RanksResponse       union by rank; the latest attempt (restart) wins
 *   StragglersResponse  union by report id; the newest created wins; ordered
 *                       by created time
 *   ReportResponse      the newest created
 *   AlertsResponse      union by alert id; the one changed last (created,
 *                       firing or resolved) wins; ordered by created time
 *   HeatmapResponse     union of the cells by (step, rank), cut like steps
 *   TraceResponse       the one with the most windows
 *   NodesResponse       union of the culprit rows by (node, gpu, job), the
 *                       newest report kept (merge_nodes.h)
 * Pure: no I/O, no logging. */
#ifndef ARGUS_ARGUSCTL_MERGE_H
#define ARGUS_ARGUSCTL_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* Merge the n answers in (each of type type, none NULL; 1 <= n <= 64) into a new
 * message of that type, independent of the inputs (free it with
 * protobuf_c_message_free_unpacked). NULL on allocation failure, or when
 * no merge rule knows type. */
ProtobufCMessage *merge_answers(const ProtobufCMessageDescriptor *type, ProtobufCMessage *const *in,
                                size_t n);

/* True when merge_answers knows type. */
bool merge_supported(const ProtobufCMessageDescriptor *type);

#endif
