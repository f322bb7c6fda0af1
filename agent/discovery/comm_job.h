/* The job of a rank known from its communicator (agent/discovery/): a
 * process spawned without a rank variable at exec, whose own exec
 * environment names no job by a job variable. Takes in the rank as its
 * environment made it (environ.h: job from MASTER_ADDR or "default"), the
 * job its rendezvous store names (discovery_rendezvous), and the exec
 * environments of its ancestors under PROC_ROOT; gives out its job, the
 * first of:
 *  1. a job variable of its nearest ancestor that has one (the launcher's
 *     id wins, as for ranks with a rank variable);
 *  2. the store its process group was made over ("torch-HOST:PORT" from
 *     c10d::TCPStore, job_source "TCPStore"): the ranks of one job share
 *     it on every node, however each node's spawner learned it. The world
 *     size is not part of it: two live jobs cannot share a store's address,
 *     and a node whose launcher has MASTER_ADDR at exec must name the job
 *     as a node that spawned its ranks does;
 *  3. its own MASTER_ADDR:MASTER_PORT, else its nearest ancestor's;
 *  4. "job-PPID@NODE" (job_source "parent": the ranks of one spawn on one
 *     node share their parent).
 * Reads /proc; no state, no log. */
#ifndef ARGUS_AGENT_DISCOVERY_COMM_JOB_H
#define ARGUS_AGENT_DISCOVERY_COMM_JOB_H

#include <stddef.h>

#include "agent/discovery/environ.h"

#define COMM_JOB_DEPTH_MAX 16 /* ancestors looked at */

/* Set ri->job and ri->job_source by the rules above, unless its job came
 * from a job variable (left as it is). store_job: the job of its store, or
 * NULL. envbuf (envcap bytes, the caller's scratch) is overwritten. ri's
 * ppid and node must be set. */
void comm_job_pick(const char *proc_root, const struct environ_config *c, const char *store_job,
                   char *envbuf, size_t envcap, struct rank_info *ri);

#endif
