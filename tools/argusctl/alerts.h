/* The human view of the collector's alerts, for argusctl alerts: firing
 * first, then pending, then resolved, each with its age (since it fired,
 * appeared, or resolved), job, cause, subject (node, peer group or rank),
 * ranks and summary. */
#ifndef ARGUS_ARGUSCTL_ALERTS_H
#define ARGUS_ARGUSCTL_ALERTS_H

#include <stdint.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

/* "3s", "12m", "5h", "2d": how long ago since_ns was at now_ns. */
void alerts_age(uint64_t since_ns, uint64_t now_ns, char *out, size_t len);

/* Print resp's alerts to out as of now_ns; a line saying there are none
 * (for job, when not empty) otherwise. Returns the number printed. */
size_t alerts_print(FILE *out, const Argus__V1__AlertsResponse *resp, uint64_t now_ns,
                    const char *job);

#endif
