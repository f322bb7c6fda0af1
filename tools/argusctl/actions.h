/* The human view of the collector's actions, for argusctl actions: the
 * breaker (open since when and why, or how many hook runs the window holds),
 * the mode (dry run, hooks run, no rules), then one line per record, oldest
 * first: id, age, kind, node, cause, outcome, exit status, undone, report,
 * output; and the command itself (list, undo, reset) over the target. */
#ifndef ARGUS_ARGUSCTL_ACTIONS_H
#define ARGUS_ARGUSCTL_ACTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

struct ctl_target;

/* What argusctl actions runs with. */
struct actions_command {
    struct ctl_target *target; /* one collector (a set is refused) */
    uint64_t timeout_ms;
    bool json;
    uint32_t limit; /* --limit: the newest N records (0: all) */
    bool is_set;    /* the address names a collector set */
};

/* argusctl actions (sub NULL: list), actions undo ID (sub "undo", arg the
 * ID), actions reset [NOTE] (sub "reset", arg the note or NULL). Prints the
 * answer (a table, or JSON with o->json) and returns an argusctl exit code
 * (ctl_exit.h); a set, or an unknown subcommand, is CTL_USAGE. */
int actions_command(const struct actions_command *o, const char *sub, const char *arg);

/* Print resp to out as of now_ns. Returns the number of records printed. */
size_t actions_print(FILE *out, const Argus__V1__ActionsResponse *resp, uint64_t now_ns);

/* One line about a (after an undo). */
void actions_print_one(FILE *out, const Argus__V1__Action *a, uint64_t now_ns);

#endif
