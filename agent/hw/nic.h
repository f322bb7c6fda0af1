/* The node's network interfaces' error counters, for each step's
 * HwCounters (proto/argus.proto): a slow link often shows there first.
 *
 * Takes in: sysfs under a root (normally "/sys", a test's fake tree
 * otherwise): for each Ethernet-like interface under class/net (not lo),
 * statistics/{rx,tx}_errors, statistics/{rx,tx}_dropped and
 * carrier_down_count (carrier_changes / 2 on kernels without it); for each
 * InfiniBand port under class/infiniband/DEV/ports/N/counters,
 * symbol_error + port_rcv_errors, port_xmit_discards, link_downed. With
 * the root "/sys", also the drops of each interface's root qdisc (rtnetlink
 * RTM_GETQDISC, the agent's network namespace): `tc netem loss` and a full
 * queue drop there, where the device counters do not see it.
 *
 * Gives out monotonic totals since nic_new over the watched interfaces:
 * each call adds what each counter grew since the last one; a counter that
 * went down (the interface was recreated) or an interface seen for the
 * first time adds nothing that call. Interfaces are looked for again at
 * every call (a NIC that comes and goes is followed).
 *
 * Not thread-safe: one thread samples (hw.c's).
 */
#ifndef ARGUS_AGENT_HW_NIC_H
#define ARGUS_AGENT_HW_NIC_H

#include <stddef.h>
#include <stdint.h>

struct nic_totals {
    uint64_t errors;     /* rx + tx errors; IB symbol + port receive errors */
    uint64_t drops;      /* rx + tx drops, root qdisc drops; IB transmit discards */
    uint64_t link_downs; /* carrier losses; IB link downed */
    uint32_t nics;       /* interfaces and IB ports watched at this call */
};

struct nic;

/* Watch the interfaces named in list (comma-separated names, an IB port as
 * DEV/PORT, e.g. "mlx5_0/1"; NULL or "": every one but lo, and every IB
 * port) under sysroot (NULL: "/sys"). One that does not exist yet is
 * watched from when it appears. NULL on ENOMEM, or with why for a list with
 * an empty or over-long name. */
struct nic *nic_new(const char *sysroot, const char *list, char *why, size_t whylen);

/* The totals now (see above) into *out. 0, or -errno when nothing could be
 * read (out keeps the previous totals). */
int nic_sample(struct nic *n, struct nic_totals *out);

void nic_free(struct nic *n);

#endif
