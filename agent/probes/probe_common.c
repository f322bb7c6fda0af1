/* Shared probe plumbing (see probe_common.h). */
#include "agent/probes/probe_common.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent/sources/event.h"
#include "agent/symbols/procmaps.h"
#include "agent/symbols/symbolize.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"

int probe_bpf_supported(char *why, size_t whylen)
{
    if (geteuid() != 0) {
        snprintf(why, whylen, "not root (BPF needs CAP_BPF and CAP_PERFMON)");
        return -EPERM;
    }
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        snprintf(why, whylen, "no kernel BTF (/sys/kernel/btf/vmlinux)");
        return -ENOTSUP;
    }
    return 0;
}

int probe_tp_btf_supported(const char *const *tps, char *why, size_t whylen)
{
    struct btf *btf;
    int err = probe_bpf_supported(why, whylen);

    if (err < 0)
        return err;
    btf = btf__load_vmlinux_btf();
    if (!btf) {
        err = -errno;
        snprintf(why, whylen, "cannot read kernel BTF: %s", strerror(-err));
        return err;
    }
    for (size_t i = 0; tps && tps[i] && err == 0; i++) {
        char name[128];

        snprintf(name, sizeof(name), "btf_trace_%s", tps[i]);
        if (btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) < 0) {
            snprintf(why, whylen, "kernel has no tracepoint %s (tp_btf)", tps[i]);
            err = -ENOTSUP;
        }
    }
    btf__free(btf);
    return err;
}

int probe_uprobe_supported(char *why, size_t whylen)
{
    int err = probe_bpf_supported(why, whylen);

    if (err == 0 && access("/sys/bus/event_source/devices/uprobe/type", R_OK) != 0) {
        snprintf(why, whylen, "no uprobe PMU (CONFIG_UPROBES)");
        err = -ENOTSUP;
    }
    return err;
}

int probe_perf_supported(char *why, size_t whylen)
{
    int err = probe_bpf_supported(why, whylen);

    if (err == 0 && access("/proc/sys/kernel/perf_event_paranoid", R_OK) != 0) {
        snprintf(why, whylen, "no perf events (CONFIG_PERF_EVENTS)");
        err = -ENOTSUP;
    }
    return err;
}

/* libbpf's print callback: fmt comes from libbpf, not from data. */
__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level,
                                                            const char *fmt, va_list ap)
{
    char line[512];

    if (level == LIBBPF_DEBUG || LOG_LEVEL_DEBUG > log_threshold)
        return 0;
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_emit(LOG_LEVEL_DEBUG, "libbpf", "%s", line);
    return 0;
}

void probe_libbpf_logging(void)
{
    libbpf_set_print(libbpf_log);
}

int probe_pids_update(struct probe_pids *pids, struct bpf_map *map, uint32_t pid, const char *root,
                      bool add)
{
    size_t i;
    __u8 one = 1;

    for (i = 0; i < pids->n && pids->v[i].pid != pid; i++)
        ;
    if (!add) {
        if (i < pids->n)
            pids->v[i] = pids->v[--pids->n];
        if (map)
            bpf_map__delete_elem(map, &pid, sizeof(pid), 0);
        return 0;
    }
    if (i == pids->n) {
        struct probe_pid *tmp = realloc(pids->v, (pids->n + 1) * sizeof(*tmp));

        if (!tmp)
            return -ENOMEM;
        pids->v = tmp;
        pids->n++;
        pids->v[i] = (struct probe_pid){0}; /* rescans start from the shortest interval */
    }
    pids->v[i].pid = pid;
    if (root)
        snprintf(pids->v[i].root, sizeof(pids->v[i].root), "%s", root);
    else
        snprintf(pids->v[i].root, sizeof(pids->v[i].root), "/proc/%u/root", pid);
    if (map && bpf_map__update_elem(map, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY) < 0)
        return -errno;
    return 0;
}

void probe_pids_free(struct probe_pids *pids)
{
    free(pids->v);
    pids->v = NULL;
    pids->n = 0;
}

bool probe_uprobes_lib_matches(const char *const *libs, const char *path)
{
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    for (size_t i = 0; libs && libs[i]; i++)
        if (!strncmp(base, libs[i], strlen(libs[i])))
            return true;
    return false;
}

static int uprobes_push_link(struct probe_uprobes *u, struct bpf_link *link)
{
    struct bpf_link **tmp = realloc(u->links, (u->nlinks + 1) * sizeof(*tmp));

    if (!tmp) {
        bpf_link__destroy(link);
        return -ENOMEM;
    }
    u->links = tmp;
    u->links[u->nlinks++] = link;
    return 0;
}

static int uprobes_attach_one(struct probe_uprobes *u, const char *path, uint64_t off,
                              uint64_t cookie)
{
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie);
    struct bpf_link *link;
    int err;

    link = bpf_program__attach_uprobe_opts(u->enter, -1, path, off, &opts);
    if (!link)
        return -errno;
    err = uprobes_push_link(u, link);
    if (err < 0 || !u->exit || (cookie & PROBE_UPROBE_ENTRY_ONLY))
        return err;
    opts.retprobe = true;
    link = bpf_program__attach_uprobe_opts(u->exit, -1, path, off, &opts);
    if (!link)
        return -errno;
    return uprobes_push_link(u, link);
}

/* uprobe_multi links (kernel 6.6+) through the bpf syscall: libbpf 1.1 and
 * Debian 12's 6.1 UAPI headers predate them. */
#define UPROBES_ATTACH_MULTI 48 /* BPF_TRACE_UPROBE_MULTI */
#define UPROBES_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */

struct uprobes_multi_attr { /* union bpf_attr's link_create, uprobe_multi member */
    uint32_t prog_fd, target_fd, attach_type, flags;
    uint64_t path, offsets, ref_ctr_offsets, cookies;
    uint32_t cnt, multi_flags, pid, pad;
};

/* One link of prog on n functions of path (file offsets, cookies or NULL):
 * its fd or -errno. */
static int uprobes_multi_link(int prog, const char *path, const uint64_t *offs,
                              const uint64_t *cookies, size_t n, uint32_t flags)
{
    struct uprobes_multi_attr a = {.prog_fd = (uint32_t)prog,
                                   .attach_type = UPROBES_ATTACH_MULTI,
                                   .path = (uint64_t)(uintptr_t)path,
                                   .offsets = (uint64_t)(uintptr_t)offs,
                                   .cookies = (uint64_t)(uintptr_t)cookies,
                                   .cnt = (uint32_t)n,
                                   .multi_flags = flags};
    long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));

    return fd < 0 ? -errno : (int)fd;
}

/* Does the kernel make uprobe_multi links? A program loaded for them, linked
 * to "/" (no file to probe), fails with EBADF where it does, EINVAL where
 * it does not know the attach type. Probed once. */
static bool uprobes_multi_supported(void)
{
    static int supported = -1;
    struct bpf_insn ret0[] = {{.code = BPF_ALU64 | BPF_MOV | BPF_K}, {.code = BPF_JMP | BPF_EXIT}};
    LIBBPF_OPTS(bpf_prog_load_opts, o,
                .expected_attach_type = (enum bpf_attach_type)UPROBES_ATTACH_MULTI);
    uint64_t off = 0;
    int prog, link;

    if (supported >= 0)
        return supported;
    supported = 0;
    prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", ret0, 2, &o);
    if (prog < 0)
        return false;
    link = uprobes_multi_link(prog, "/", &off, NULL, 1, 0);
    supported = link == -EBADF;
    if (link >= 0)
        close(link);
    close(prog);
    return supported;
}

bool probe_uprobes_prepare(struct bpf_program *enter, struct bpf_program *exit)
{
    enum bpf_attach_type multi = (enum bpf_attach_type)UPROBES_ATTACH_MULTI;
    static bool logged;

    if (!logged) {
        logged = true;
        log_info("probe", "uprobes: %s",
                 uprobes_multi_supported() ? "one uprobe_multi link per library and program"
                                           : "perf-event uprobes (this kernel has no "
                                             "uprobe_multi links: needs CAP_SYS_ADMIN)");
    }
    if (!uprobes_multi_supported() || bpf_program__set_expected_attach_type(enter, multi) < 0)
        return false;
    if (exit && bpf_program__set_expected_attach_type(exit, multi) < 0) {
        bpf_program__set_expected_attach_type(enter, 0);
        return false;
    }
    return true;
}

static int uprobes_push_fd(struct probe_uprobes *u, int fd)
{
    int *tmp = realloc(u->link_fds, (u->nlink_fds + 1) * sizeof(*tmp));

    if (!tmp) {
        close(fd);
        return -ENOMEM;
    }
    u->link_fds = tmp;
    u->link_fds[u->nlink_fds++] = fd;
    return 0;
}

/* n functions of path (offs, cookies) on one link per program; the exit
 * program's leaves out the entry-only ones (offs and cookies are reordered:
 * those last). */
static int uprobes_attach_multi(struct probe_uprobes *u, const char *path, uint64_t *offs,
                                uint64_t *cookies, size_t n)
{
    int fd = uprobes_multi_link(bpf_program__fd(u->enter), path, offs, cookies, n, 0), err;
    size_t nret = 0;

    if (fd < 0)
        return fd;
    err = uprobes_push_fd(u, fd);
    if (err < 0 || !u->exit)
        return err;
    for (size_t i = 0; i < n; i++) {
        if (cookies[i] & PROBE_UPROBE_ENTRY_ONLY)
            continue;
        uint64_t o = offs[i], c = cookies[i];
        offs[i] = offs[nret], cookies[i] = cookies[nret];
        offs[nret] = o, cookies[nret++] = c;
    }
    if (!nret)
        return 0;
    fd = uprobes_multi_link(bpf_program__fd(u->exit), path, offs, cookies, nret,
                            UPROBES_MULTI_RETURN);
    return fd < 0 ? fd : uprobes_push_fd(u, fd);
}

static int uprobes_remember_inode(struct probe_uprobes *u, const struct stat *st)
{
    void *tmp;

    for (size_t i = 0; i < u->ninodes; i++)
        if (u->inodes[i].dev == st->st_dev && u->inodes[i].ino == st->st_ino)
            return 1;
    tmp = realloc(u->inodes, (u->ninodes + 1) * sizeof(*u->inodes));
    if (!tmp)
        return -ENOMEM;
    u->inodes = tmp;
    u->inodes[u->ninodes].dev = st->st_dev;
    u->inodes[u->ninodes].ino = st->st_ino;
    u->ninodes++;
    return 0;
}

/* probe_uprobes_attach_file with uprobe_multi links: every function of
 * funcs that elf defines on one link per program. */
static int uprobes_attach_file_multi(struct probe_uprobes *u, const char *path,
                                     struct symbolize_elf *elf)
{
    uint64_t *offs = calloc(u->nfuncs ? u->nfuncs : 1, 2 * sizeof(*offs)), *cookies;
    size_t n = 0;
    int err;

    if (!offs)
        return -ENOMEM;
    cookies = offs + u->nfuncs;
    for (size_t i = 0; i < u->nfuncs; i++)
        if (symbolize_elf_file_offset(elf, u->funcs[i].symbol, &offs[n]) == 0)
            cookies[n++] = u->funcs[i].cookie;
    err = n ? uprobes_attach_multi(u, path, offs, cookies, n) : 0;
    free(offs);
    if (err < 0) {
        u->failures += n;
        log_warn("probe", "uprobes on %zu functions of %s: %s", n, path, strerror(-err));
        return 0;
    }
    u->attached += n;
    return (int)n;
}

int probe_uprobes_attach_file(struct probe_uprobes *u, const char *path)
{
    struct symbolize_elf *elf = NULL;
    struct stat st;
    int err, n = 0;

    if (stat(path, &st) < 0)
        return -errno;
    err = uprobes_remember_inode(u, &st);
    if (err != 0)
        return err < 0 ? err : 0;
    err = symbolize_elf_open(path, &elf);
    if (err < 0)
        return err;
    if (u->multi) {
        n = uprobes_attach_file_multi(u, path, elf);
        symbolize_elf_free(elf);
        return n;
    }
    for (size_t i = 0; i < u->nfuncs; i++) {
        uint64_t off;

        if (symbolize_elf_file_offset(elf, u->funcs[i].symbol, &off) < 0)
            continue;
        err = uprobes_attach_one(u, path, off, u->funcs[i].cookie);
        if (err < 0) {
            u->failures++;
            log_warn("probe", "uprobe %s:%s: %s", path, u->funcs[i].symbol, strerror(-err));
            continue;
        }
        n++;
    }
    symbolize_elf_free(elf);
    u->attached += (uint64_t)n;
    return n;
}

int probe_uprobes_scan(struct probe_uprobes *u, uint32_t pid, const char *root)
{
    char path[PATH_MAX], last[256] = "";
    struct procmaps pm;
    struct procmaps_entry m;
    int total = 0, err;

    err = procmaps_open(&pm, NULL, pid);
    if (err < 0)
        return err == -ENOENT ? -ESRCH : err;
    while (procmaps_next(&pm, &m) > 0) {
        int n;

        if (m.path[0] != '/' || !strcmp(m.path, last) ||
            !probe_uprobes_lib_matches(u->libs, m.path))
            continue;
        snprintf(last, sizeof(last), "%s", m.path);
        if (root)
            snprintf(path, sizeof(path), "%s%s", root, m.path);
        else
            snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m.path);
        n = probe_uprobes_attach_file(u, path);
        if (n > 0)
            total += n;
    }
    procmaps_close(&pm);
    return total;
}

bool probe_idle_skip(const struct probe_pids *pids, uint64_t *next_ns, uint64_t now_ns)
{
    if (pids->n)
        return false;
    if (now_ns < *next_ns)
        return true;
    *next_ns = now_ns + PROBE_IDLE_POLL_NS;
    return false;
}

void probe_uprobes_rescan(struct probe_uprobes *u, struct probe_pids *pids, uint64_t now_ns)
{
    for (size_t i = 0; i < pids->n; i++) {
        struct probe_pid *p = &pids->v[i];

        if (!p->scan_every_ns) { /* just added (and scanned then) */
            p->scan_every_ns = PROBE_RESCAN_MIN_NS;
            p->next_scan_ns = now_ns + p->scan_every_ns;
            continue;
        }
        if (now_ns < p->next_scan_ns)
            continue;
        if (probe_uprobes_scan(u, p->pid, p->root) > 0)
            p->scan_every_ns = PROBE_RESCAN_MIN_NS;
        else if (p->scan_every_ns < PROBE_RESCAN_MAX_NS)
            p->scan_every_ns *= 2;
        p->next_scan_ns = now_ns + p->scan_every_ns;
    }
}

void probe_uprobes_detach(struct probe_uprobes *u)
{
    for (size_t i = 0; i < u->nlinks; i++)
        bpf_link__destroy(u->links[i]);
    for (size_t i = 0; i < u->nlink_fds; i++)
        close(u->link_fds[i]);
    free(u->links);
    free(u->link_fds);
    u->link_fds = NULL;
    u->nlink_fds = 0;
    free(u->inodes);
    u->links = NULL;
    u->inodes = NULL;
    u->nlinks = u->ninodes = 0;
}

int probe_report_drops(const struct event_sink *sink, uint64_t dropped, uint64_t *reported,
                       const char *reason)
{
    struct agent_event ev = {.kind = AGENT_EVENT_DROPS};

    if (dropped <= *reported)
        return 0;
    ev.drops.count = dropped - *reported;
    ev.drops.reason = reason;
    *reported = dropped;
    sink->event(sink->ctx, &ev);
    return 1;
}

int probe_wakeup_open(struct probe_wakeup *w, int ring_epoll_fd, uint64_t interval_ns)
{
    struct epoll_event ev = {.events = EPOLLIN};
    int err = 0;

    w->timerfd = -1;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0) {
        err = -errno;
        goto fail;
    }
    w->timerfd = clock_timerfd((clock_mono_ns() / interval_ns + 1) * interval_ns, interval_ns);
    if (w->timerfd < 0) {
        err = w->timerfd;
        goto fail;
    }
    ev.data.fd = w->timerfd;
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->timerfd, &ev) < 0) {
        err = -errno;
        goto fail;
    }
    ev.data.fd = ring_epoll_fd;
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, ring_epoll_fd, &ev) < 0) {
        err = -errno;
        goto fail;
    }
    return 0;
fail:
    probe_wakeup_close(w);
    return err;
}

void probe_wakeup_drain(struct probe_wakeup *w)
{
    uint64_t expirations;

    if (w->timerfd >= 0 && read(w->timerfd, &expirations, sizeof(expirations)) < 0)
        return; /* EAGAIN: not expired */
}

void probe_wakeup_close(struct probe_wakeup *w)
{
    if (w->epfd >= 0)
        close(w->epfd);
    if (w->timerfd >= 0)
        close(w->timerfd);
    w->epfd = w->timerfd = -1;
}

size_t probe_metric(char *buf, size_t len, const char *probe, const char *name, uint64_t value)
{
    int n;

    if (!len)
        return 0;
    n = snprintf(buf, len, "argus_probe_%s{probe=\"%s\"} %" PRIu64 "\n", name, probe, value);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len - 1;
}

int probe_counter_decode(uint32_t key, uint64_t cur, uint64_t last, uint32_t counter, uint64_t ts,
                         struct agent_event *out)
{
    if (cur <= last)
        return 0;
    *out = (struct agent_event){.kind = AGENT_EVENT_COUNTER, .pid = key, .ts_ns = ts};
    out->counter.counter = counter;
    out->counter.value = cur - last;
    return 1;
}

static struct probe_counter_last *counters_slot(struct probe_counter_table *t, uint32_t key)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].key == key)
            return &t->v[i];
    if (array_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0)
        return NULL;
    t->v[t->n] = (struct probe_counter_last){key, 0};
    return &t->v[t->n++];
}

/* key's value now: its growth goes to sink. 1 when an event went, 0 when
 * it did not grow, -ENOMEM. */
static int counters_take(struct probe_counter_table *t, uint32_t key, uint64_t value,
                         uint32_t counter, uint64_t now, const struct event_sink *sink)
{
    struct probe_counter_last *slot = counters_slot(t, key);
    struct agent_event ev;
    int n = 0;

    if (!slot)
        return -ENOMEM;
    if (probe_counter_decode(key, value, slot->value, counter, now, &ev)) {
        sink->event(sink->ctx, &ev);
        n = 1;
    }
    slot->value = value;
    return n;
}

/* A key at a time: two syscalls a key. */
static int counters_poll_each(int map_fd, struct probe_counter_table *t, uint32_t counter,
                              uint64_t now, const struct event_sink *sink)
{
    uint64_t value;
    uint32_t key, next;
    bool first = true;
    int n = 0;

    while (bpf_map_get_next_key(map_fd, first ? NULL : &key, &next) == 0) {
        first = false;
        key = next;
        if (bpf_map_lookup_elem(map_fd, &key, &value) < 0)
            continue;
        int r = counters_take(t, key, value, counter, now, sink);
        if (r < 0)
            return r;
        n += r;
    }
    return n;
}

int probe_counters_poll(int map_fd, struct probe_counter_table *t, uint32_t counter,
                        const struct event_sink *sink)
{
    uint32_t keys[PROBE_COUNTERS_BATCH], batch = 0, count;
    uint64_t now = clock_mono_ns(), values[PROBE_COUNTERS_BATCH];
    bool first = true, more = true;
    int n = 0;

    if (t->one_by_one)
        return counters_poll_each(map_fd, t, counter, now, sink);
    while (more) {
        count = PROBE_COUNTERS_BATCH;
        if (bpf_map_lookup_batch(map_fd, first ? NULL : &batch, &batch, keys, values, &count,
                                 NULL) < 0) {
            if (errno != ENOENT) { /* ENOENT: the last batch, count keys in it */
                /* no batch lookup here (kept), or a bucket over a batch (ENOSPC): this
                 * time a key at a time; what was taken already shows no growth */
                t->one_by_one =
                    first && (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP);
                int r = counters_poll_each(map_fd, t, counter, now, sink);
                return r < 0 ? r : n + r;
            }
            more = false;
        }
        first = false;
        for (uint32_t i = 0; i < count; i++) {
            int r = counters_take(t, keys[i], values[i], counter, now, sink);
            if (r < 0)
                return r;
            n += r;
        }
    }
    return n;
}

void probe_counters_free(struct probe_counter_table *t)
{
    free(t->v);
    *t = (struct probe_counter_table){0};
}
