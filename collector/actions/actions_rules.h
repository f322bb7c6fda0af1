/* collector/actions/actions_rules: the config key actions.rules, which
 * hook runs for which cause: "CAUSE:/path/to/hook,CAUSE:/path" (CAUSE a
 * common/causes.h name, any case: compute, link, host, silent, ...; "*":
 * every cause that pages without a rule of its own). A cause that never
 * pages (data_skew, job_regression, imbalance, unknown) is refused: only
 * paging suspects act. "" names none: actions are off. Pure, thread-safe. */
#ifndef ARGUS_COLLECTOR_ACTIONS_ACTIONS_RULES_H
#define ARGUS_COLLECTOR_ACTIONS_ACTIONS_RULES_H

#include <stddef.h>

#include "common/causes.h"

#define ACTIONS_RULES_PATH 256 /* bytes of a hook path, NUL included */

/* The hook of each cause value ("" none). */
struct actions_rules {
    char hook[CAUSES_MAX][ACTIONS_RULES_PATH];
};

/* Parse text into *out and check each hook (absolute, executable). Returns
 * the number of causes with a hook, or -EINVAL with a sentence in err
 * (errlen bytes) that quotes the bad entry. */
int actions_rules_parse(const char *text, struct actions_rules *out, char *err, size_t errlen);

#endif
