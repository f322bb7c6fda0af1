/* collector/query/: it takes in Query calls (argusctl) from transport, reads
 * the store and the alerts, and gives out argus.v1 replies. The report page
 * beside it (collector/web/) serves the same store over HTTP.
 *
 * Query: the unary handlers of the /argus.v1.Query methods over the store. Requests
 * and replies are the argus.v1 *Request / *Response messages. Errors: a
 * malformed request is INVALID_ARGUMENT, an unknown job or report NOT_FOUND,
 * a store failure UNAVAILABLE; each with a message that says which. Under
 * mTLS a caller whose certificate lacks the query role (OU=query) gets
 * PERMISSION_DENIED. */
#ifndef ARGUS_COLLECTOR_QUERY_H
#define ARGUS_COLLECTOR_QUERY_H

#include <stdint.h>

#include "collector/transport/transport.h"

struct alerts;
struct store;

#define QUERY_DEFAULT_STEP_LIMIT 10000u
#define QUERY_MAX_STEP_LIMIT 100000u
#define QUERY_MAX_REPLY_BYTES (48u << 20) /* a steps reply stops (truncated) past this */
#define QUERY_MAX_HEATMAP_CELLS 2000000u  /* a heatmap reply stops (truncated) past this */

/* Register every Query method on t, serving from store (not owned). */
int query_register(struct transport_server *t, struct store *store);

/* Register /argus.v1.Query/Alerts on t, serving the alerts of a (not
 * owned; NULL: an empty list). */
int query_register_alerts(struct transport_server *t, struct alerts *a);

#endif
