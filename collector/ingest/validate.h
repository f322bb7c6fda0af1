/* A decoded batch checked against the per-batch limits of ingest
 * (ingest.h, struct ingest_limits): sizes, strings, name ids; not those of
 * limits.h, which need the collector's state. */
#ifndef ARGUS_COLLECTOR_VALIDATE_H
#define ARGUS_COLLECTOR_VALIDATE_H

#include <stddef.h>

#include "collector/ingest/ingest.h"
#include "proto/argus.pb-c.h"

/* Returns TRANSPORT_OK, or TRANSPORT_INVALID_ARGUMENT /
 * TRANSPORT_RESOURCE_EXHAUSTED with a sentence in err. Pure: no store
 * access. */
int ingest_validate(const Argus__V1__Batch *b, const struct ingest_limits *l, char *err,
                    size_t errlen);

#endif
