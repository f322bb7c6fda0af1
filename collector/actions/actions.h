/* collector/actions/: what the collector does to a node its diagnosis
 * blames. It takes in every stored report that pages (from diagnosis, beside
 * the drill-down captures) and gives out, per paging suspect with a node
 * whose cause has a hook (actions.rules, actions_rules.h), at most one run of
 * that hook per (node, cause) while it stands, with ARGUS_ACTION=drain and the
 * report on stdin; a record of every decision in the store's actions family
 * (argus.v1.Action: what, when, report, node, cause, exit status, output,
 * dry run or not, undone or not); and, on request (argusctl actions undo),
 * the same hook with ARGUS_ACTION=undo for a drain argus itself did.
 *
 * Safety, in order:
 * - dry run (actions.dry_run, the default): nothing runs; the record says
 *   "would_run" and what would have run;
 * - role: with a collector set only the job's primary acts (the acts_for
 *   callback; a collector with no set is primary of every job), so two
 *   collectors fed the same job do not both act;
 * - idempotence and the breaker: action_book.h (at most actions.max real
 *   runs per actions.window fleet-wide, i.e. per primary collector; the
 *   next trips it and nothing runs until argusctl actions reset);
 * - only a record of kind "drain", outcome "done", not undone, can be undone.
 * The breaker and the records survive a restart (the store).
 *
 * Hooks run on one worker thread, in report order; actions_observe only
 * queues (bounded: a full queue drops the report, counted), so diagnosis
 * never waits on a hook. Thread-safe.
 */
#ifndef ARGUS_COLLECTOR_ACTIONS_H
#define ARGUS_COLLECTOR_ACTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/http.h"
#include "proto/argus.pb-c.h"

struct store;

struct actions_options {
    const char *rules;   /* actions.rules ("" or NULL: actions off) */
    bool dry_run;        /* actions.dry_run */
    uint32_t max;        /* actions.max: real runs per window */
    uint64_t window_ns;  /* actions.window */
    uint64_t timeout_ns; /* actions.timeout: one hook run */
    /* Whether this collector acts for job (its primary); NULL: always. */
    bool (*acts_for)(void *ctx, const char *job);
    void *acts_for_ctx;
};

struct actions;

/* What actions_new checks of o (the rules, each hook executable): 0, or
 * -EINVAL with a sentence naming the key in err (errlen bytes). */
int actions_check(const struct actions_options *o, char *err, size_t errlen);

/* Check o, load the records and the breaker from s (not owned, outlives
 * *out), start the worker. Returns 0 and *out, or -EINVAL/-ENOMEM/-EIO with
 * a sentence in err. With no rules *out still lists and resets (nothing
 * acts). */
int actions_new(struct store *s, const struct actions_options *o, struct actions **out, char *err,
                size_t errlen);

/* Stop the worker (a hook in flight finishes or times out) and free; what
 * is queued and not yet acted on is dropped (the next report acts). NULL
 * is fine. */
void actions_free(struct actions *a);

/* A stored report r that pages (valid during the call; copied). Never
 * blocks on a hook. NULL a is fine. */
void actions_observe(struct actions *a, const Argus__V1__Report *r);

/* The newest limit records (0: all kept), oldest first, with the breaker
 * and the settings, packed as an argus.v1.ActionsResponse into *data
 * (malloc'd, the caller frees) and *len. 0 or -ENOMEM. */
int actions_list_packed(struct actions *a, uint32_t limit, void **data, size_t *len);

/* Undo the drain id for by (the caller's name, "" when unknown): run its
 * hook with ARGUS_ACTION=undo and record the result. *out: a copy of the
 * record after it (argus__v1__action__free_unpacked). Returns 0; -ENOENT
 * (no such record), -EPERM (not a drain argus did: a breaker record, a
 * failed drain, one undone already), -EIO (the undo hook failed: recorded,
 * the drain still stands; *out set) or -ENOMEM, with a sentence in err. A
 * dry-run record is marked undone without running anything. */
int actions_undo(struct actions *a, const char *id, const char *by, Argus__V1__Action **out,
                 char *err, size_t errlen);

/* Close the breaker for by with note (recorded as a breaker_reset record,
 * also when it was closed). *was_open says whether it was open. 0, -EIO
 * (not stored: the breaker is closed in memory only) or -ENOMEM. */
int actions_reset(struct actions *a, const char *by, const char *note, bool *was_open, char *err,
                  size_t errlen);

/* /metrics: argus_actions_total{cause,outcome} (outcome done, would_run,
 * failed, standing, breaker), argus_actions_undone_total,
 * argus_actions_breaker_open, argus_actions_dropped_total,
 * argus_actions_store_errors_total. NULL a: nothing. */
void actions_write_metrics(struct actions *a, struct http_buf *b);

#endif
