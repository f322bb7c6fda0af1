/* Any protobuf-c message as a json-c object, through its descriptor: field
 * names as in argus.proto, enums by name, bytes as their length. A 64-bit
 * integer is a JSON number when jq (whose numbers are doubles) holds it
 * exactly, |v| <= 2^53, and a decimal string beyond: so UNIX-ns times
 * (*_unix_ns, always past 2^53) are strings, steps and durations numbers
 * unless they grow that large; name ids (fixed64) are 16-digit hex strings. A field named
 * "name_id" gets a sibling "name" when resolve() knows the id. */
#ifndef ARGUS_COMMON_PBJSON_H
#define ARGUS_COMMON_PBJSON_H

#include <json-c/json.h>
#include <protobuf-c/protobuf-c.h>
#include <stdint.h>

/* Return the name of id, or NULL; the string must outlive the call. */
typedef const char *(*pbjson_resolve_fn)(void *ctx, uint64_t id);

/* A new json object (caller owns: json_object_put). NULL on failure. */
struct json_object *pbjson_from_message(const ProtobufCMessage *m, pbjson_resolve_fn resolve,
                                        void *ctx);

/* Small json-c accessors for documents of our own (the alert events).
 * pbjson_put_str adds k: v ("" for NULL); pbjson_put_u64 adds k as a decimal
 * string (jq would round a 64-bit number). pbjson_str is k's value when it
 * is a string (valid while o lives), else NULL; pbjson_u64 that string as a
 * decimal number (0 when absent); pbjson_int k's value as an int, or def when
 * absent. */
void pbjson_put_str(struct json_object *o, const char *k, const char *v);
void pbjson_put_u64(struct json_object *o, const char *k, uint64_t v);
const char *pbjson_str(struct json_object *o, const char *k);
uint64_t pbjson_u64(struct json_object *o, const char *k);
int pbjson_int(struct json_object *o, const char *k, int def);

#endif
