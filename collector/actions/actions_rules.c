/* actions.rules: see actions_rules.h. */
#include "collector/actions/actions_rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hook_exec.h"

/* One "CAUSE:/path" entry (len bytes of entry) into out; "*" into star. */
static int actions_rules_entry(const char *entry, size_t len, struct actions_rules *out, char *star,
                               char *err, size_t errlen)
{
    char item[ACTIONS_RULES_PATH + 64], cause[64], why[400];
    const char *colon;
    const struct causes_row *row = NULL;

    if (len >= sizeof(item))
        goto bad_length;
    memcpy(item, entry, len);
    item[len] = '\0';
    colon = strchr(item, ':');
    if (!colon || colon == item || (size_t)(colon - item) >= sizeof(cause)) {
        snprintf(err, errlen, "'%s' is not CAUSE:/path/to/hook", item);
        return -EINVAL;
    }
    snprintf(cause, sizeof(cause), "%.*s", (int)(colon - item), item);
    if (strcmp(cause, "*") != 0 && (!(row = causes_by_name(cause)) || !row->pages)) {
        snprintf(err, errlen, "'%s': %s", item,
                 row ? "that cause never pages, so it never acts"
                     : "not a cause (compute, link, host, silent, hang, exited or *)");
        return -EINVAL;
    }
    if (strlen(colon + 1) >= ACTIONS_RULES_PATH)
        goto bad_length;
    if (hook_exec_check(colon + 1, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s: %s", cause, why);
        return -EINVAL;
    }
    strcpy(row ? out->hook[row->value] : star, colon + 1);
    return 0;
bad_length:
    snprintf(err, errlen, "an entry is longer than %d bytes", ACTIONS_RULES_PATH - 1);
    return -EINVAL;
}

int actions_rules_parse(const char *text, struct actions_rules *out, char *err, size_t errlen)
{
    char star[ACTIONS_RULES_PATH] = "";
    int n = 0;

    memset(out, 0, sizeof(*out));
    for (const char *p = text ? text : ""; *p;) {
        size_t len = strcspn(p, ",");
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        size_t trim = len;
        while (trim && (p[trim - 1] == ' ' || p[trim - 1] == '\t'))
            trim--;
        if (trim && actions_rules_entry(p, trim, out, star, err, errlen) < 0)
            return -EINVAL;
        p += len;
        p += *p == ',';
    }
    for (int c = 0; c < causes_count(); c++) {
        if (!out->hook[c][0] && star[0] && causes_pages(c))
            strcpy(out->hook[c], star);
        n += out->hook[c][0] != '\0';
    }
    return n;
}
