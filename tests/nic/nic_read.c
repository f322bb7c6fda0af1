/* nic-read: agent/hw/nic's totals (the node's NIC errors, drops and
 * carrier losses) sampled every interval, one JSON line per sample on
 * stdout; the first sample's totals are 0 (nothing is counted at a first
 * sighting). tests/integration/hw_nic_netns.sh runs it in a network
 * namespace.
 *
 *   nic-read [--list L] [--sysroot DIR] [--interval-ms N] [--count N]
 *
 * --count 0 (the default) samples until killed. Exit 0, or 1 on a bad
 * option, a bad list or a failed sample (its error on stderr). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/hw/nic.h"

struct nic_read_opts {
    const char *list;
    const char *sysroot;
    long interval_ms;
    long count;
};

static int nic_read_parse(int argc, char **argv, struct nic_read_opts *o)
{
    static const struct option longs[] = {
        {"list", required_argument, NULL, 'l'},
        {"sysroot", required_argument, NULL, 's'},
        {"interval-ms", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    int c;

    *o = (struct nic_read_opts){.interval_ms = 1000};
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'l')
            o->list = optarg;
        else if (c == 's')
            o->sysroot = optarg;
        else if (c == 'i')
            o->interval_ms = strtol(optarg, NULL, 10);
        else if (c == 'c')
            o->count = strtol(optarg, NULL, 10);
        else
            return -1;
    }
    return optind == argc && o->interval_ms > 0 && o->count >= 0 ? 0 : -1;
}

static void nic_read_sleep(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    struct nic_read_opts o;
    struct nic_totals t = {0};
    char why[256];
    struct nic *n;
    int err = 0;

    if (nic_read_parse(argc, argv, &o) < 0) {
        fprintf(stderr,
                "usage: nic-read [--list L] [--sysroot DIR] [--interval-ms N] [--count N]\n");
        return 1;
    }
    if (!(n = nic_new(o.sysroot, o.list, why, sizeof(why)))) {
        fprintf(stderr, "nic-read: %s\n", why[0] ? why : "out of memory");
        return 1;
    }
    for (long i = 0; (o.count == 0 || i < o.count) && !err; i++) {
        if (i)
            nic_read_sleep(o.interval_ms);
        if ((err = nic_sample(n, &t)) < 0) {
            fprintf(stderr, "nic-read: sample: %s\n", strerror(-err));
            break;
        }
        printf("{\"errors\":%" PRIu64 ",\"drops\":%" PRIu64 ",\"link_downs\":%" PRIu64
               ",\"nics\":%" PRIu32 "}\n",
               t.errors, t.drops, t.link_downs, t.nics);
        fflush(stdout);
    }
    nic_free(n);
    return err ? 1 : 0;
}
