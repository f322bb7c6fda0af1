/* The NIC error counters (nic.h): sysfs files per interface and IB port,
 * the root qdiscs' drops by one rtnetlink dump per sample. */
#include "agent/hw/nic.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#define NIC_NAME_MAX 80   /* "DEV/PORT": an IB device name is at most 63 */
#define NIC_IFNAME_MAX 15 /* IFNAMSIZ - 1 */
#define NIC_MAX 1024      /* interfaces and ports followed (more are not) */
#define NIC_LIST_MAX 64   /* names in an explicit list */
#define NIC_SLOTS 6       /* counters per interface or port */
#define NIC_NL_BUF 32768  /* a netlink dump's skb is at most this */

enum nic_sum { NIC_SUM_ERRORS, NIC_SUM_DROPS, NIC_SUM_LINK_DOWNS };

/* One sysfs counter file and the total it adds to. */
struct nic_counter_def {
    const char *file;
    enum nic_sum sum;
};

/* An interface's slots: these four, then carrier losses, then qdisc drops. */
static const struct nic_counter_def nic_net_defs[] = {
    {"statistics/rx_errors", NIC_SUM_ERRORS},
    {"statistics/tx_errors", NIC_SUM_ERRORS},
    {"statistics/rx_dropped", NIC_SUM_DROPS},
    {"statistics/tx_dropped", NIC_SUM_DROPS},
};
#define NIC_NET_CARRIER 4
#define NIC_NET_QDISC 5

static const struct nic_counter_def nic_ib_defs[] = {
    {"symbol_error", NIC_SUM_ERRORS},
    {"port_rcv_errors", NIC_SUM_ERRORS},
    {"port_xmit_discards", NIC_SUM_DROPS},
    {"link_downed", NIC_SUM_LINK_DOWNS},
};

/* A counter's last raw value; have is false before its first sighting. */
struct nic_counter {
    uint64_t last;
    bool have;
};

/* An interface ("eth0") or IB port ("mlx5_0/1") seen at the last call. */
struct nic_port {
    char name[NIC_NAME_MAX];
    bool ib;
    int ifindex; /* an interface's, to see it recreated and find its qdisc */
    unsigned gen;
    struct nic_counter c[NIC_SLOTS];
};

/* A root qdisc's drops from the last dump. */
struct nic_qdisc {
    int ifindex;
    uint64_t drops;
};

struct nic {
    char *sysroot;
    char **names; /* the explicit list (NULL: every interface and port) */
    size_t nnames;
    struct nic_port *ports;
    size_t nports;
    unsigned gen;
    struct nic_totals totals;
    bool netlink; /* read the root qdiscs (the real /sys) */
    int nl_fd;    /* -1 until opened, again after a failed dump */
    uint32_t nl_seq;
    char *nl_buf;
    struct nic_qdisc *qdiscs;
    size_t nqdiscs;
};

/* --- sysfs ------------------------------------------------------------ */

/* The unsigned number in the file at path into *v: 0 or -errno. */
static int nic_read_u64(const char *path, uint64_t *v)
{
    char buf[32], *end;
    ssize_t len;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    len = read(fd, buf, sizeof(buf) - 1);
    if (len < 0)
        len = -errno;
    close(fd);
    if (len <= 0)
        return len < 0 ? (int)len : -ENODATA;
    buf[len] = '\0';
    if (!isdigit((unsigned char)buf[0]))
        return -EINVAL;
    errno = 0;
    *v = strtoull(buf, &end, 10);
    return errno ? -errno : 0;
}

/* nic_read_u64 of the file DIR/FILE. */
static int nic_read_at(const char *dir, const char *file, uint64_t *v)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
        return -ENAMETOOLONG;
    return nic_read_u64(path, v);
}

/* --- root qdiscs by rtnetlink ----------------------------------------- */

static void nic_nl_close(struct nic *n)
{
    if (n->nl_fd >= 0)
        close(n->nl_fd);
    n->nl_fd = -1;
}

/* Opens the route socket (receives time out after a second: the sampler
 * never hangs on it) and sends one RTM_GETQDISC dump request. 0 or -errno. */
static int nic_nl_request(struct nic *n)
{
    struct {
        struct nlmsghdr h;
        struct tcmsg t;
    } req = {0};
    struct timeval tv = {.tv_sec = 1};

    if (n->nl_fd < 0) {
        n->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (n->nl_fd < 0)
            return -errno;
        setsockopt(n->nl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.t));
    req.h.nlmsg_type = RTM_GETQDISC;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.h.nlmsg_seq = ++n->nl_seq;
    req.t.tcm_family = AF_UNSPEC;
    if (send(n->nl_fd, &req, req.h.nlmsg_len, 0) < 0)
        return -errno;
    return 0;
}

/* The drops in a TCA_STATS2 nest (its TCA_STATS_QUEUE), or -1. */
static int64_t nic_nl_stats2(const struct rtattr *nest)
{
    int len = RTA_PAYLOAD(nest);
    const struct rtattr *a = RTA_DATA(nest);
    struct gnet_stats_queue q;

    for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type != TCA_STATS_QUEUE || RTA_PAYLOAD(a) < sizeof(q))
            continue;
        memcpy(&q, RTA_DATA(a), sizeof(q));
        return q.drops;
    }
    return -1;
}

/* One RTM_NEWQDISC message: a root qdisc's drops into n->qdiscs. */
static void nic_nl_qdisc(struct nic *n, const struct nlmsghdr *h)
{
    const struct tcmsg *t = NLMSG_DATA(h);
    int len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*t));
    const struct rtattr *a = (const void *)((const char *)t + NLMSG_ALIGN(sizeof(*t)));
    int64_t drops = -1, legacy = -1;
    struct tc_stats st;

    if (len < 0 || t->tcm_parent != TC_H_ROOT || n->nqdiscs >= NIC_MAX)
        return;
    for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == TCA_STATS2) {
            drops = nic_nl_stats2(a);
        } else if (a->rta_type == TCA_STATS && RTA_PAYLOAD(a) >= sizeof(st)) {
            memcpy(&st, RTA_DATA(a), sizeof(st));
            legacy = st.drops;
        }
    }
    if (drops < 0)
        drops = legacy;
    if (drops >= 0)
        n->qdiscs[n->nqdiscs++] = (struct nic_qdisc){t->tcm_ifindex, (uint64_t)drops};
}

/* The messages of one receive: 1 at the dump's end, 0 for more, -errno. */
static int nic_nl_messages(struct nic *n, ssize_t len)
{
    const struct nlmsghdr *h = (const void *)n->nl_buf;

    for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        if (h->nlmsg_seq != n->nl_seq)
            continue; /* an earlier, abandoned dump's */
        if (h->nlmsg_type == NLMSG_DONE)
            return 1;
        if (h->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *e = NLMSG_DATA(h);
            return e->error ? e->error : -EPROTO;
        }
        if (h->nlmsg_type == RTM_NEWQDISC)
            nic_nl_qdisc(n, h);
    }
    return 0;
}

/* Every root qdisc's drops into n->qdiscs (none after a failure, and the
 * socket is closed: a dump left half-read would make the next one EBUSY).
 * 0 or -errno. */
static int nic_nl_dump(struct nic *n)
{
    ssize_t len;
    int err;

    n->nqdiscs = 0;
    err = nic_nl_request(n);
    while (!err) {
        len = recv(n->nl_fd, n->nl_buf, NIC_NL_BUF, MSG_TRUNC);
        if (len < 0)
            err = -errno;
        else if (len > NIC_NL_BUF)
            err = -EMSGSIZE;
        else if ((err = nic_nl_messages(n, len)) > 0)
            return 0;
    }
    n->nqdiscs = 0;
    nic_nl_close(n);
    return err;
}

/* The root qdisc drops of the interface ifindex, or -1 when none. */
static int64_t nic_qdisc_drops(const struct nic *n, int ifindex)
{
    for (size_t i = 0; i < n->nqdiscs; i++)
        if (n->qdiscs[i].ifindex == ifindex)
            return (int64_t)n->qdiscs[i].drops;
    return -1;
}

/* --- ports and totals ------------------------------------------------- */

/* The followed port named name (a new one when absent, NULL at NIC_MAX or
 * without memory); marked seen at this call. */
static struct nic_port *nic_port_get(struct nic *n, const char *name, bool ib)
{
    struct nic_port *p;

    for (size_t i = 0; i < n->nports; i++)
        if (n->ports[i].ib == ib && strcmp(n->ports[i].name, name) == 0) {
            n->ports[i].gen = n->gen;
            return &n->ports[i];
        }
    if (n->nports >= NIC_MAX)
        return NULL;
    p = realloc(n->ports, (n->nports + 1) * sizeof(*p));
    if (!p)
        return NULL;
    n->ports = p;
    p = &n->ports[n->nports++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->ib = ib;
    p->gen = n->gen;
    return p;
}

/* Adds each counter's growth since the last call to its total (v[i] < 0:
 * not read; a first sighting or a counter that went down adds nothing). */
static void nic_port_add(struct nic *n, struct nic_port *p, const int64_t *v,
                         const enum nic_sum *sums, size_t count)
{
    uint64_t *totals[] = {&n->totals.errors, &n->totals.drops, &n->totals.link_downs};

    for (size_t i = 0; i < count; i++) {
        struct nic_counter *c = &p->c[i];
        if (v[i] < 0) {
            c->have = false;
            continue;
        }
        if (c->have && (uint64_t)v[i] >= c->last)
            *totals[sums[i]] += (uint64_t)v[i] - c->last;
        c->last = (uint64_t)v[i];
        c->have = true;
    }
}

/* Carrier losses of the interface in dir: carrier_down_count, or half of
 * carrier_changes on kernels before 4.16; -1 when neither reads. */
static int64_t nic_net_carrier(const char *dir)
{
    uint64_t v;

    if (nic_read_at(dir, "carrier_down_count", &v) == 0)
        return (int64_t)v;
    if (nic_read_at(dir, "carrier_changes", &v) == 0)
        return (int64_t)(v / 2);
    return -1;
}

/* Samples the interface name: 1 when it is there, 0 when not. */
static int nic_sample_net(struct nic *n, const char *name)
{
    char dir[PATH_MAX];
    int64_t v[NIC_SLOTS];
    enum nic_sum sums[NIC_SLOTS] = {
        [NIC_NET_CARRIER] = NIC_SUM_LINK_DOWNS, [NIC_NET_QDISC] = NIC_SUM_DROPS};
    uint64_t x, ifindex;
    struct nic_port *p;

    if ((size_t)snprintf(dir, sizeof(dir), "%s/class/net/%s", n->sysroot, name) >= sizeof(dir) ||
        nic_read_at(dir, "ifindex", &ifindex) < 0)
        return 0;
    if (!(p = nic_port_get(n, name, false)))
        return 0;
    if (p->ifindex != (int)ifindex) /* recreated under the same name */
        memset(p->c, 0, sizeof(p->c));
    p->ifindex = (int)ifindex;
    for (size_t i = 0; i < sizeof(nic_net_defs) / sizeof(nic_net_defs[0]); i++) {
        v[i] = nic_read_at(dir, nic_net_defs[i].file, &x) == 0 ? (int64_t)x : -1;
        sums[i] = nic_net_defs[i].sum;
    }
    v[NIC_NET_CARRIER] = nic_net_carrier(dir);
    v[NIC_NET_QDISC] = nic_qdisc_drops(n, p->ifindex);
    nic_port_add(n, p, v, sums, NIC_SLOTS);
    return 1;
}

/* Samples the IB port dev/port: 1 when it is there, 0 when not. */
static int nic_sample_ib(struct nic *n, const char *dev, const char *port)
{
    enum { COUNT = sizeof(nic_ib_defs) / sizeof(nic_ib_defs[0]) };
    char dir[PATH_MAX], name[NIC_NAME_MAX];
    int64_t v[COUNT];
    enum nic_sum sums[COUNT];
    uint64_t x;
    int found = 0;
    struct nic_port *p;

    if ((size_t)snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/%s/counters", n->sysroot,
                         dev, port) >= sizeof(dir) ||
        (size_t)snprintf(name, sizeof(name), "%s/%s", dev, port) >= sizeof(name))
        return 0;
    for (size_t i = 0; i < COUNT; i++) {
        v[i] = nic_read_at(dir, nic_ib_defs[i].file, &x) == 0 ? (int64_t)x : -1;
        sums[i] = nic_ib_defs[i].sum;
        found |= v[i] >= 0;
    }
    if (!found || !(p = nic_port_get(n, name, true)))
        return 0;
    nic_port_add(n, p, v, sums, COUNT);
    return 1;
}

/* The entries of SYSROOT/sub other than . and .. (and lo when skip_lo),
 * each passed to fn with arg. The sum of fn's returns, or -errno when the
 * directory does not open. */
static int nic_each_entry(struct nic *n, const char *sub, bool skip_lo,
                          int (*fn)(struct nic *, const char *, void *), void *arg)
{
    char path[PATH_MAX];
    struct dirent *e;
    DIR *d;
    int sum = 0;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", n->sysroot, sub) >= sizeof(path))
        return -ENAMETOOLONG;
    if (!(d = opendir(path)))
        return -errno;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || (skip_lo && strcmp(e->d_name, "lo") == 0))
            continue;
        sum += fn(n, e->d_name, arg);
    }
    closedir(d);
    return sum;
}

static int nic_scan_net_one(struct nic *n, const char *name, void *arg)
{
    return nic_sample_net(n, name);
}

static int nic_scan_port_one(struct nic *n, const char *port, void *dev)
{
    return nic_sample_ib(n, dev, port);
}

static int nic_scan_dev_one(struct nic *n, const char *dev, void *arg)
{
    char sub[PATH_MAX];
    int r;

    snprintf(sub, sizeof(sub), "class/infiniband/%s/ports", dev);
    r = nic_each_entry(n, sub, false, nic_scan_port_one, (void *)dev);
    return r > 0 ? r : 0;
}

/* Samples every interface but lo and every IB port: how many, or -errno
 * when class/net does not open. */
static int nic_scan_all(struct nic *n)
{
    int nets = nic_each_entry(n, "class/net", true, nic_scan_net_one, NULL);
    int ibs;

    if (nets < 0)
        return nets;
    ibs = nic_each_entry(n, "class/infiniband", false, nic_scan_dev_one, NULL);
    return nets + (ibs > 0 ? ibs : 0);
}

/* Samples the listed interfaces and ports: how many are there, or -errno
 * when class/net cannot be read (no sysfs). */
static int nic_scan_list(struct nic *n)
{
    char path[PATH_MAX], dev[NIC_NAME_MAX];
    int count = 0;

    snprintf(path, sizeof(path), "%s/class/net", n->sysroot);
    if (access(path, R_OK | X_OK) < 0)
        return -errno;
    for (size_t i = 0; i < n->nnames; i++) {
        const char *slash = strchr(n->names[i], '/');
        if (!slash) {
            count += nic_sample_net(n, n->names[i]);
            continue;
        }
        snprintf(dev, sizeof(dev), "%.*s", (int)(slash - n->names[i]), n->names[i]);
        count += nic_sample_ib(n, dev, slash + 1);
    }
    return count;
}

/* Forgets the ports not seen at this call: back later, a first sighting. */
static void nic_sweep(struct nic *n)
{
    for (size_t i = 0; i < n->nports;) {
        if (n->ports[i].gen == n->gen)
            i++;
        else
            n->ports[i] = n->ports[--n->nports];
    }
}

int nic_sample(struct nic *n, struct nic_totals *out)
{
    struct nic_totals before = n->totals;
    int count;

    n->gen++;
    if (n->netlink)
        nic_nl_dump(n); /* on failure no qdisc counts, the rest still does */
    count = n->names ? nic_scan_list(n) : nic_scan_all(n);
    if (count < 0) {
        n->totals = before;
        return count;
    }
    nic_sweep(n);
    n->totals.nics = (uint32_t)count;
    *out = n->totals;
    return 0;
}

/* --- the list and the object ------------------------------------------ */

/* Checks one list name (trimmed): 0, or -EINVAL with why. */
static int nic_check_name(const char *s, char *why, size_t whylen)
{
    const char *slash = strchr(s, '/');
    size_t len = strlen(s);

    if (len == 0 || (slash && (slash == s || !slash[1]))) {
        snprintf(why, whylen, "an empty name in the NIC list");
        return -EINVAL;
    }
    if (slash ? len >= NIC_NAME_MAX || strchr(slash + 1, '/') : len > NIC_IFNAME_MAX) {
        snprintf(why, whylen,
                 "NIC list: '%s' is too long (interface: at most %d characters, "
                 "IB port: DEV/PORT)",
                 s, NIC_IFNAME_MAX);
        return -EINVAL;
    }
    if (s[0] == '.' || (slash && slash[1] == '.')) {
        snprintf(why, whylen, "NIC list: '%s' is no interface name", s);
        return -EINVAL;
    }
    return 0;
}

/* Splits list at commas into n->names (spaces around a name trimmed).
 * 0, -EINVAL with why, or -ENOMEM. */
static int nic_parse_list(struct nic *n, const char *list, char *why, size_t whylen)
{
    const char *s = list, *end;
    char *name;
    int err;

    if (!(n->names = calloc(NIC_LIST_MAX, sizeof(*n->names))))
        return -ENOMEM;
    for (;; s = end + 1) {
        end = strchrnul(s, ',');
        while (s < end && isspace((unsigned char)*s))
            s++;
        size_t len = (size_t)(end - s);
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
        if (n->nnames == NIC_LIST_MAX) {
            snprintf(why, whylen, "NIC list: more than %d names", NIC_LIST_MAX);
            return -EINVAL;
        }
        if (!(name = strndup(s, len)))
            return -ENOMEM;
        n->names[n->nnames++] = name;
        if ((err = nic_check_name(name, why, whylen)) < 0)
            return err;
        if (!*end)
            return 0;
    }
}

struct nic *nic_new(const char *sysroot, const char *list, char *why, size_t whylen)
{
    struct nic *n = calloc(1, sizeof(*n));
    char ignored[1];

    if (!why || !whylen) {
        why = ignored;
        whylen = sizeof(ignored);
    }
    why[0] = '\0';
    if (!n)
        return NULL;
    n->nl_fd = -1;
    n->netlink = !sysroot || strcmp(sysroot, "/sys") == 0;
    n->sysroot = strdup(sysroot ? sysroot : "/sys");
    if (!n->sysroot || (list && *list && nic_parse_list(n, list, why, whylen) < 0))
        goto fail;
    if (n->netlink &&
        (!(n->nl_buf = malloc(NIC_NL_BUF)) || !(n->qdiscs = calloc(NIC_MAX, sizeof(*n->qdiscs)))))
        goto fail;
    return n;
fail:
    nic_free(n);
    return NULL;
}

void nic_free(struct nic *n)
{
    if (!n)
        return;
    nic_nl_close(n);
    for (size_t i = 0; i < n->nnames; i++)
        free(n->names[i]);
    free(n->names);
    free(n->ports);
    free(n->qdiscs);
    free(n->nl_buf);
    free(n->sysroot);
    free(n);
}
