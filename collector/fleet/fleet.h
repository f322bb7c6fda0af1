/* collector/fleet/: fleet memory (issue 29). It takes in the stored reports
 * of every job (collector/store/) and gives out, per node and GPU, the
 * distinct jobs it was a hardware-class culprit of over a window: a suspect
 * that pages (Suspect.pages) with a node, of a cause whose row in
 * common/causes.c has .fleet set (compute, link, host, hang, exited; a
 * throttled GPU joins with its row). Imbalance, data skew, job regressions
 * and findings that page nobody never count. A job counts once per node
 * however many reports named it; the newest report is the one cited.
 *
 * Two readers, two costs. fleet_collect answers the Nodes query (argusctl
 * nodes, exclude) for any window when it is asked: it walks the keys of the
 * reports family once and unpacks the window's reports
 * (store_scan_reports_since). /metrics never scans: it reads the snapshot
 * that fleet_tick refreshes from the main loop every fleet.refresh over
 * fleet.window, and shows its FLEET_METRIC_NODES highest-scoring nodes as
 * argus_node_culprit_jobs{node} (the rest only counted in
 * argus_fleet_culprit_nodes), so a scrape costs the same at any store size.
 *
 * Threads: fleet_tick from one thread; fleet_collect, fleet_write_metrics and
 * the getters from any (the snapshot has its own lock). */
#ifndef ARGUS_COLLECTOR_FLEET_H
#define ARGUS_COLLECTOR_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

struct fleet;
struct http_buf;
struct store;

#define FLEET_MAX_ROWS 100000u   /* (node, GPU, job) rows one answer carries */
#define FLEET_METRIC_NODES 1000u /* nodes with their own argus_node_culprit_jobs sample */

struct fleet_options {
    uint64_t window_ns;    /* fleet.window: how far back the snapshot and a bare query look */
    uint32_t suspect_jobs; /* fleet.suspect_jobs: a node with this many jobs is suspect */
    uint64_t refresh_ns;   /* fleet.refresh: how often fleet_tick renews the snapshot */
};

/* A fleet memory over store (not owned; it must outlive the fleet), with
 * an empty snapshot until the first fleet_tick. NULL on allocation
 * failure. */
struct fleet *fleet_new(struct store *store, const struct fleet_options *o);

/* NULL is fine. */
void fleet_free(struct fleet *f);

/* The culprit rows of reports created at or after since_ns (collector
 * clock) into out (zero-initialised by the caller): out->culprits, one per
 * (node, gpu, job) ordered by them, with the newest report of that job
 * naming it; out->truncated when more than FLEET_MAX_ROWS distinct rows
 * were found (the scan stops there). Returns the row count, or -EIO /
 * -ENOMEM with out emptied. Free with fleet_rows_free. */
int fleet_collect(struct store *store, uint64_t since_ns, Argus__V1__NodesResponse *out);

/* Free what fleet_collect put in r (not r itself); r is emptied. */
void fleet_rows_free(Argus__V1__NodesResponse *r);

/* The Nodes answer of f: fleet_collect since since_ns (0: fleet.window
 * before now_ns) with the window's start and fleet.suspect_jobs filled
 * in. Same returns and ownership as fleet_collect. */
int fleet_answer(struct fleet *f, uint64_t since_ns, uint64_t now_ns,
                 Argus__V1__NodesResponse *out);

/* Renew the snapshot when fleet.refresh has passed since the last one
 * (now_ns: collector clock; the first call always renews). Returns 1 when
 * renewed, 0 when not due, or a negative errno when the renewal failed
 * (the old snapshot is kept, the failure counted). */
int fleet_tick(struct fleet *f, uint64_t now_ns);

/* The snapshot's series for /metrics into b. */
void fleet_write_metrics(struct fleet *f, struct http_buf *b);

#endif
