/* The human view of the collector's actions, for argusctl actions: the
 * breaker (open since when and why, or how many hook runs the window holds),
 * the mode (dry run, hooks run, no rules), then one line per record, oldest
 * first: id, age, kind, node, cause, outcome, exit status, undone, report,
 * output. */
#ifndef ARGUS_ARGUSCTL_ACTIONS_H
#define ARGUS_ARGUSCTL_ACTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

/* Print resp to out as of now_ns. Returns the number of records printed. */
size_t actions_print(FILE *out, const Argus__V1__ActionsResponse *resp, uint64_t now_ns);

/* One line about a (after an undo). */
void actions_print_one(FILE *out, const Argus__V1__Action *a, uint64_t now_ns);

#endif
