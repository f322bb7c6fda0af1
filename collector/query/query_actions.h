/* collector/query/query_actions: the Query methods of collector/actions/.
 *   /argus.v1.Query/Actions      list (the query role, OU=query)
 *   /argus.v1.Query/ActionUndo   undo a drain argus did (the admin role, OU=admin)
 *   /argus.v1.Query/ActionsReset close the breaker (the admin role)
 * Undo and reset change what argus did to nodes, so a query certificate
 * that reads everything may not call them; in plaintext anyone may.
 * Errors: a malformed request INVALID_ARGUMENT, an unknown action
 * NOT_FOUND, an action argus may not undo FAILED_PRECONDITION, a failed
 * undo hook INTERNAL (it is recorded), no actions stage UNAVAILABLE. */
#ifndef ARGUS_COLLECTOR_QUERY_ACTIONS_H
#define ARGUS_COLLECTOR_QUERY_ACTIONS_H

#include "collector/transport/transport.h"

struct actions;

/* Register the three methods on t, serving a (not owned; NULL: UNAVAILABLE). */
int query_register_actions(struct transport_server *t, struct actions *a);

#endif
