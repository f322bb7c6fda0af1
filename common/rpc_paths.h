/* gRPC method paths of argus.v1 (protoc-c generates no service stubs). Keep in
 * step with the service comment at the top of proto/argus.proto. */
#ifndef ARGUS_COMMON_RPC_PATHS_H
#define ARGUS_COMMON_RPC_PATHS_H

#define RPC_INGEST_PUSH "/argus.v1.Ingest/Push"
#define RPC_QUERY_JOBS "/argus.v1.Query/Jobs"
#define RPC_QUERY_STEPS "/argus.v1.Query/Steps"
#define RPC_QUERY_RANKS "/argus.v1.Query/Ranks"
#define RPC_QUERY_STRAGGLERS "/argus.v1.Query/Stragglers"
#define RPC_QUERY_REPORT "/argus.v1.Query/Report"
#define RPC_QUERY_ALERTS "/argus.v1.Query/Alerts"
#define RPC_QUERY_HEATMAP "/argus.v1.Query/Heatmap"
#define RPC_QUERY_TRACE "/argus.v1.Query/Trace"
#define RPC_QUERY_NODES "/argus.v1.Query/Nodes"
#define RPC_QUERY_ACTIONS "/argus.v1.Query/Actions"
#define RPC_QUERY_ACTION_UNDO "/argus.v1.Query/ActionUndo"
#define RPC_QUERY_ACTIONS_RESET "/argus.v1.Query/ActionsReset"

/* In the message of a call the collector refused because its peer (host)
 * had grpc.max_calls_per_peer calls open: RESOURCE_EXHAUSTED like a batch
 * over a limit, but about the call, not what it carried (retry it). */
#define RPC_PEER_CAP_MARK "grpc.max_calls_per_peer"

#endif
