/* Rendezvous hashing of jobs over collectors: see placement.h. */
#include "common/placement.h"

#include <stdbool.h>
#include <string.h>

#include "common/mix.h"
#include "common/name_id.h"

uint64_t placement_weight(const char *job, const char *member)
{
    uint64_t z = name_id_update(NAME_ID_BASIS, job, strlen(job) + 1); /* the NUL separates */

    z = name_id_update(z, member, strlen(member));
    return mix64(z);
}

/* Does candidate i come before j (higher weight, else the smaller name)? */
static bool placement_before(uint64_t wi, const char *ni, uint64_t wj, const char *nj)
{
    return wi != wj ? wi > wj : strcmp(ni, nj) < 0;
}

/* Is members[i]'s name one of out[0..m)'s? */
static bool placement_taken(const char *const *members, const size_t *out, size_t m, size_t i)
{
    for (size_t x = 0; x < m; x++)
        if (strcmp(members[out[x]], members[i]) == 0)
            return true;
    return false;
}

size_t placement_pick(const char *job, const char *const *members, size_t n, size_t *out, size_t k)
{
    size_t m = 0;

    /* k passes of a linear scan: k is 2 (primary, standby), n a few dozen */
    while (m < k) {
        size_t best = n;
        uint64_t wbest = 0;
        for (size_t i = 0; i < n; i++) {
            if (!members[i] || !members[i][0] || placement_taken(members, out, m, i))
                continue;
            uint64_t w = placement_weight(job, members[i]);
            if (best == n || placement_before(w, members[i], wbest, members[best])) {
                best = i;
                wbest = w;
            }
        }
        if (best == n)
            break;
        out[m++] = best;
    }
    return m;
}
