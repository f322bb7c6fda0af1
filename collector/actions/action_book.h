/* collector/actions/action_book: what the collector did and may do next, in
 * memory and pure (no store, no clock, no processes: tests/unit/
 * test_action_book.c drives it with made-up times). actions.c loads it from
 * the store, asks it before every hook run, and stores what it changed.
 *
 * Idempotence: a drain of (node, cause) stands while its record says
 * outcome "done" (or "would_run" in a dry run) and it is not undone; a
 * second report of the same node and cause does not act again. A dry-run
 * record stands only for dry runs, a real one only for real runs, so
 * turning dry_run off acts for real on the next report.
 *
 * The breaker: at most max real hook runs within any window (failed runs
 * count: a hook that fails in a storm is still a storm). The next one trips
 * it: it stays open, whatever the window, until action_book_reset (a human,
 * through argusctl actions reset). Dry runs never count and never trip it.
 *
 * Not thread-safe: the caller holds its lock.
 */
#ifndef ARGUS_COLLECTOR_ACTIONS_ACTION_BOOK_H
#define ARGUS_COLLECTOR_ACTIONS_ACTION_BOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Records kept in memory (the newest; the store keeps them all). */
#define ACTION_BOOK_KEEP 1024u
/* The most actions.max can be: the breaker keeps this many run times. */
#define ACTION_BOOK_MAX_RUNS 1000u

struct action_book {
    Argus__V1__Action **items; /* oldest first, owned (protobuf-c free_unpacked or
                                * action_book_free_action) */
    size_t n, cap;
    uint32_t max;       /* actions.max: real runs per window */
    uint64_t window_ns; /* actions.window */
    bool open;          /* the breaker */
    char reason[256];   /* why it opened */
    uint64_t opened_ns;
    uint64_t runs[ACTION_BOOK_MAX_RUNS]; /* real run times within the window, oldest first */
    size_t nruns;
};

enum action_verdict {
    ACTION_RUN = 0,      /* act (or, dry run, record "would_run") */
    ACTION_STANDING = 1, /* an action of this node and cause stands: nothing to do */
    ACTION_BREAKER = 2,  /* the breaker is open: nothing runs */
    ACTION_TRIP = 3,     /* this run would exceed max in the window: trip, do not run */
};

/* An empty book with the breaker closed. max is clamped to
 * 1..ACTION_BOOK_MAX_RUNS. */
void action_book_init(struct action_book *b, uint32_t max, uint64_t window_ns);

/* Free every record (not b itself). */
void action_book_clear(struct action_book *b);

/* What to do about a drain of (node, cause) at now_ns, dry run or not. Pure:
 * changes nothing (action_book_note_run, action_book_trip do). */
enum action_verdict action_book_decide(struct action_book *b, const char *node, int cause,
                                       bool dry_run, uint64_t now_ns);

/* A real hook run started at now_ns (it counts against the window). */
void action_book_note_run(struct action_book *b, uint64_t now_ns);

/* Open the breaker at now_ns with reason (copied). Open already: unchanged. */
void action_book_trip(struct action_book *b, const char *reason, uint64_t now_ns);

/* Close the breaker and forget the runs of the window (a reset starts a new
 * window). Returns whether it was open. */
bool action_book_reset(struct action_book *b);

/* Take a (malloc'd, owned from now) as the newest record; past
 * ACTION_BOOK_KEEP the oldest that does not stand is freed. 0 or -ENOMEM
 * (a is then still the caller's). */
int action_book_add(struct action_book *b, Argus__V1__Action *a);

/* The record with id, or NULL; valid until the book changes. */
Argus__V1__Action *action_book_find(struct action_book *b, const char *id);

/* Whether a stands (see above). */
bool action_book_stands(const Argus__V1__Action *a);

/* The breaker as its stored message (recent_unix_ns points into b: valid
 * until b changes), and back (recent times past ACTION_BOOK_MAX_RUNS
 * dropped, oldest first). */
void action_book_breaker(const struct action_book *b, Argus__V1__ActionBreaker *out);
void action_book_set_breaker(struct action_book *b, const Argus__V1__ActionBreaker *in);

/* A record of our own making (all strings malloc'd): free it. NULL is fine. */
void action_book_free_action(Argus__V1__Action *a);

#endif
