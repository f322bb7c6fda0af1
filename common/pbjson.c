#include "common/pbjson.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integers jq (an IEEE double) holds exactly: |v| <= 2^53. */
#define PBJSON_EXACT_MAX (1ULL << 53)

static struct json_object *pbjson_int64(int64_t v)
{
    char text[24];

    if (v >= -(int64_t)PBJSON_EXACT_MAX && v <= (int64_t)PBJSON_EXACT_MAX)
        return json_object_new_int64(v);
    snprintf(text, sizeof(text), "%" PRId64, v);
    return json_object_new_string(text);
}

static struct json_object *pbjson_uint64(uint64_t v)
{
    char text[24];

    if (v <= PBJSON_EXACT_MAX)
        return json_object_new_uint64(v);
    snprintf(text, sizeof(text), "%" PRIu64, v);
    return json_object_new_string(text);
}

static struct json_object *pbjson_scalar(const ProtobufCFieldDescriptor *f, const void *p,
                                         pbjson_resolve_fn resolve, void *ctx)
{
    char hex[20];

    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_object_new_int(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_object_new_int64(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return pbjson_int64(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
        return pbjson_uint64(*(const uint64_t *)p);
    case PROTOBUF_C_TYPE_FIXED64: /* name ids and communicator ids */
        snprintf(hex, sizeof(hex), "%016" PRIx64, *(const uint64_t *)p);
        return json_object_new_string(hex);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_object_new_double(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_object_new_double(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_object_new_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumValue *v =
            protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
        return v ? json_object_new_string(v->name) : json_object_new_int(*(const int *)p);
    }
    case PROTOBUF_C_TYPE_STRING:
        return json_object_new_string(*(char *const *)p ? *(char *const *)p : "");
    case PROTOBUF_C_TYPE_BYTES:
        return json_object_new_int64((int64_t)((const ProtobufCBinaryData *)p)->len);
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(ProtobufCMessage *const *)p
                   ? pbjson_from_message(*(ProtobufCMessage *const *)p, resolve, ctx)
                   : NULL;
    }
    return NULL;
}

static size_t pbjson_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    default:
        return 4;
    }
}

struct json_object *pbjson_from_message(const ProtobufCMessage *m, pbjson_resolve_fn resolve,
                                        void *ctx)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    struct json_object *o = json_object_new_object();

    for (unsigned i = 0; o && i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *arr = *(char *const *)(base + f->offset);
            struct json_object *a = json_object_new_array();
            for (size_t k = 0; k < n; k++)
                json_object_array_add(a, pbjson_scalar(f, arr + k * pbjson_size(f), resolve, ctx));
            json_object_object_add(o, f->name, a);
            continue;
        }
        const void *p = base + f->offset;
        json_object_object_add(o, f->name, pbjson_scalar(f, p, resolve, ctx));
        if (resolve && strcmp(f->name, "name_id") == 0) {
            const char *name = resolve(ctx, *(const uint64_t *)p);
            if (name)
                json_object_object_add(o, "name", json_object_new_string(name));
        }
    }
    return o;
}

void pbjson_put_str(struct json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

void pbjson_put_u64(struct json_object *o, const char *k, uint64_t v)
{
    char s[24];

    snprintf(s, sizeof(s), "%" PRIu64, v);
    pbjson_put_str(o, k, s);
}

const char *pbjson_str(struct json_object *o, const char *k)
{
    struct json_object *v;

    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

uint64_t pbjson_u64(struct json_object *o, const char *k)
{
    const char *s = pbjson_str(o, k);

    return s ? strtoull(s, NULL, 10) : 0;
}

int pbjson_int(struct json_object *o, const char *k, int def)
{
    struct json_object *v;

    return json_object_object_get_ex(o, k, &v) ? json_object_get_int(v) : def;
}
