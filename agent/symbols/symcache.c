/* Per-process maps, per-file ELF symbols and kernel symbols (see symcache.h). */
#include "agent/symbols/symcache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/procmaps.h"
#include "agent/symbols/symbolize.h"
#include "common/clock.h"

#define SYMCACHE_RETRY_NS (10 * NSEC_PER_SEC) /* a file that could not be read */

struct symcache_file {
    uint64_t dev, inode;
    struct symbolize_elf *elf; /* NULL when it could not be read */
    uint64_t bytes;
    uint64_t last_use; /* symcache.use_clock at the last lookup */
    uint64_t retry_ns; /* elf NULL: when to try again (0 = never: not an ELF file) */
};

struct symcache_proc {
    uint32_t pid;
    bool loaded;
    uint64_t loaded_ns;
    uint64_t reload_ns;          /* now between two reads: doubles while reads find nothing new */
    struct procmaps_entry *maps; /* executable mappings, by address */
    size_t nmaps;
    struct symbolize_sym *jit; /* /tmp/perf-PID.map, sorted, names owned */
    size_t njit;
};

struct symcache {
    struct symcache_options o;
    struct symcache_proc *procs;
    size_t nprocs;
    struct symcache_file *files;
    size_t nfiles;
    struct symbolize_sym *ksyms; /* names owned */
    size_t nksyms;
    bool kloaded;
    uint64_t use_clock;
    struct symcache_stats st;
};

struct symcache *symcache_new(const struct symcache_options *o)
{
    struct symcache *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    if (o)
        c->o = *o;
    if (!c->o.cap_bytes)
        c->o.cap_bytes = SYMCACHE_DEFAULT_BYTES;
    if (!c->o.max_files)
        c->o.max_files = SYMCACHE_DEFAULT_FILES;
    if (!c->o.reload_ns)
        c->o.reload_ns = SYMCACHE_DEFAULT_RELOAD_NS;
    return c;
}

static void syms_free(struct symbolize_sym *syms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)syms[i].name);
    free(syms);
}

static void proc_clear(struct symcache_proc *p)
{
    free(p->maps);
    syms_free(p->jit, p->njit);
    p->maps = NULL;
    p->jit = NULL;
    p->nmaps = p->njit = 0;
    p->loaded = false;
}

void symcache_free(struct symcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nprocs; i++)
        proc_clear(&c->procs[i]);
    free(c->procs);
    for (size_t i = 0; i < c->nfiles; i++)
        symbolize_elf_free(c->files[i].elf);
    free(c->files);
    syms_free(c->ksyms, c->nksyms);
    free(c);
}

void symcache_forget(struct symcache *c, uint32_t pid)
{
    for (size_t i = 0; i < c->nprocs; i++) {
        if (c->procs[i].pid != pid)
            continue;
        proc_clear(&c->procs[i]);
        c->procs[i] = c->procs[--c->nprocs];
        return;
    }
}

void symcache_get_stats(const struct symcache *c, struct symcache_stats *out)
{
    *out = c->st;
    out->files = c->nfiles;
    out->procs = c->nprocs;
}

/* Append to a growable array of elements of size sz. */
static int array_push(void **arr, size_t *n, size_t sz, const void *elem)
{
    if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4...: grow to the next power of two */
        size_t cap = *n ? *n * 2 : 1;
        void *tmp = realloc(*arr, cap * sz);

        if (!tmp)
            return -ENOMEM;
        *arr = tmp;
    }
    memcpy((char *)*arr + *n * sz, elem, sz);
    (*n)++;
    return 0;
}

/* --- processes ------------------------------------------------------------ */

/* The pid of pid inside its own pid namespace (the last NSpid field), which
 * is the one a JIT in a container names its perf map after. */
static uint32_t proc_inner_pid(uint32_t pid)
{
    char path[64], line[256];
    uint32_t inner = pid;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%u/status", pid);
    f = fopen(path, "re");
    if (!f)
        return pid;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        for (char *tok = strtok(line + 6, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
            inner = (uint32_t)strtoul(tok, NULL, 10);
        break;
    }
    fclose(f);
    return inner ? inner : pid;
}

/* The JIT's /tmp/perf-PID.map as the process sees it: through its root, so
 * neither a container nor the agent's own PrivateTmp= hides it. */
static void proc_load_jit(struct symcache_proc *p)
{
    char path[96], line[512], name[256];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%u/root/tmp/perf-%u.map", p->pid, proc_inner_pid(p->pid));
    f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        struct symbolize_sym sym;

        if (symbolize_parse_perf_map_line(line, &sym.addr, &sym.size, name, sizeof(name)) < 0)
            continue;
        sym.name = strdup(name);
        if (!sym.name || array_push((void **)&p->jit, &p->njit, sizeof(sym), &sym) < 0) {
            free((char *)sym.name);
            break;
        }
    }
    fclose(f);
    symbolize_syms_sort(p->jit, p->njit);
}

/* The executable mappings of p, then its JIT symbols. */
static void proc_load(struct symcache *c, struct symcache_proc *p)
{
    struct procmaps pm;
    struct procmaps_entry m;

    proc_clear(p);
    p->loaded = true;
    p->loaded_ns = clock_mono_ns();
    c->st.maps_reads++;
    if (procmaps_open(&pm, NULL, p->pid) == 0) {
        while (procmaps_next(&pm, &m) > 0)
            if (strchr(m.perms, 'x') && array_push((void **)&p->maps, &p->nmaps, sizeof(m), &m) < 0)
                break;
    }
    procmaps_close(&pm);
    proc_load_jit(p);
}

static struct symcache_proc *proc_get(struct symcache *c, uint32_t pid)
{
    struct symcache_proc fresh = {.pid = pid};

    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i].pid == pid)
            return &c->procs[i];
    if (array_push((void **)&c->procs, &c->nprocs, sizeof(fresh), &fresh) < 0)
        return NULL;
    return &c->procs[c->nprocs - 1];
}

/* The mapping holding addr (maps are in address order, as the kernel lists
 * them), or NULL. */
static const struct procmaps_entry *proc_find_map(const struct symcache_proc *p, uint64_t addr)
{
    size_t lo = 0, hi = p->nmaps;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (addr < p->maps[mid].start)
            hi = mid;
        else if (addr >= p->maps[mid].end)
            lo = mid + 1;
        else
            return &p->maps[mid];
    }
    return NULL;
}

/* --- files ---------------------------------------------------------------- */

static void file_evict_lru(struct symcache *c)
{
    size_t lru = 0;

    for (size_t i = 1; i < c->nfiles; i++)
        if (c->files[i].last_use < c->files[lru].last_use)
            lru = i;
    c->st.bytes -= c->files[lru].bytes;
    c->st.files_evicted++;
    symbolize_elf_free(c->files[lru].elf);
    c->files[lru] = c->files[--c->nfiles];
}

/* Read the file of mapping m (through the process root) into a new cache
 * entry, evicting the least recently used ones to make room. */
static struct symcache_file *file_load(struct symcache *c, uint32_t pid, const char *root,
                                       const struct procmaps_entry *m)
{
    struct symcache_file f = {.dev = m->dev, .inode = m->inode};
    char path[300];
    int err;

    if (root)
        snprintf(path, sizeof(path), "%s%s", root, m->path);
    else
        snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
    err = symbolize_elf_open(path, &f.elf);
    c->st.files_loaded++;
    if (err < 0) {
        f.elf = NULL;
        f.retry_ns = err == -ENOEXEC ? 0 : clock_mono_ns() + SYMCACHE_RETRY_NS;
    }
    f.bytes = f.elf ? symbolize_elf_bytes(f.elf) : sizeof(f);
    while (c->nfiles && (c->nfiles >= c->o.max_files || c->st.bytes + f.bytes > c->o.cap_bytes))
        file_evict_lru(c);
    f.last_use = ++c->use_clock;
    if (array_push((void **)&c->files, &c->nfiles, sizeof(f), &f) < 0) {
        symbolize_elf_free(f.elf);
        return NULL;
    }
    c->st.bytes += f.bytes;
    return &c->files[c->nfiles - 1];
}

/* The symbols of mapping m's file, read on first use; NULL when it has none
 * (the pointer is valid until the next call). */
static struct symbolize_elf *file_get(struct symcache *c, uint32_t pid, const char *root,
                                      const struct procmaps_entry *m)
{
    struct symcache_file *f;

    if (!m->inode) /* not a file we can name */
        return NULL;
    for (size_t i = 0; i < c->nfiles; i++) {
        f = &c->files[i];
        if (f->dev != m->dev || f->inode != m->inode)
            continue;
        f->last_use = ++c->use_clock;
        if (f->elf || !f->retry_ns || clock_mono_ns() < f->retry_ns)
            return f->elf;
        c->st.bytes -= f->bytes; /* a failed read, due for a retry */
        c->files[i] = c->files[--c->nfiles];
        break;
    }
    f = file_load(c, pid, root, m);
    return f ? f->elf : NULL;
}

static int file_symbolize(struct symcache *c, uint32_t pid, const char *root,
                          const struct procmaps_entry *m, uint64_t addr, char *buf, size_t len)
{
    struct symbolize_elf *elf = file_get(c, pid, root, m);
    uint64_t file_offset = addr - m->start + m->file_offset, vaddr, off;
    const char *name = NULL, *base = strrchr(m->path, '/');

    if (elf && symbolize_elf_offset_to_vaddr(elf, file_offset, &vaddr) == 0)
        name = symbolize_elf_lookup(elf, vaddr, &off);
    if (name) {
        snprintf(buf, len, "%s", name);
        return 0;
    }
    snprintf(buf, len, "[%s]+0x%" PRIx64, base ? base + 1 : m->path, file_offset);
    return -ENOENT;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Find addr's mapping or JIT symbol; re-read the maps once when it is in
 * neither and the last read is older than the process's reload interval.
 * Stacks unwound through code built without frame pointers carry addresses
 * no mapping holds: a read that still does not find one doubles the
 * interval (up to 64 x the configured one), one that does resets it. */
static void proc_lookup(struct symcache *c, struct symcache_proc *p, uint64_t addr,
                        const struct procmaps_entry **m, const struct symbolize_sym **jit)
{
    if (!p->loaded)
        proc_load(c, p);
    if (!p->reload_ns)
        p->reload_ns = c->o.reload_ns;
    for (int pass = 0; pass < 2; pass++) {
        *m = proc_find_map(p, addr);
        *jit = symbolize_syms_find(p->jit, p->njit, addr);
        if (pass) /* what this read found sets the next wait */
            p->reload_ns =
                *m || *jit ? c->o.reload_ns : min_u64(2 * p->reload_ns, 64 * c->o.reload_ns);
        if (*m || *jit || pass || clock_mono_ns() - p->loaded_ns < p->reload_ns)
            return;
        proc_load(c, p);
    }
}

int symcache_user(struct symcache *c, uint32_t pid, const char *root, uint64_t addr, char *buf,
                  size_t len)
{
    struct symcache_proc *p = proc_get(c, pid);
    const struct procmaps_entry *m;
    const struct symbolize_sym *jit;

    snprintf(buf, len, "[unknown]");
    if (!p)
        return -ENOMEM;
    proc_lookup(c, p, addr, &m, &jit);
    if (jit && (!m || !m->path[0] || m->path[0] == '[')) {
        snprintf(buf, len, "%s", jit->name);
        return 0;
    }
    if (m && m->path[0] == '[') /* [vdso], [anon:...] */
        snprintf(buf, len, "%s", m->path);
    if (!m || m->path[0] != '/')
        return -ENOENT;
    return file_symbolize(c, pid, root, m, addr, buf, len);
}

/* --- the kernel ----------------------------------------------------------- */

static void kernel_load(struct symcache *c)
{
    char line[512], name[256], type;
    unsigned long long addr;
    FILE *f = fopen("/proc/kallsyms", "re");

    c->kloaded = true;
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        struct symbolize_sym sym = {0};

        if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr ||
            (type != 't' && type != 'T'))
            continue;
        sym.addr = addr;
        sym.name = strdup(name);
        if (!sym.name || array_push((void **)&c->ksyms, &c->nksyms, sizeof(sym), &sym) < 0) {
            free((char *)sym.name);
            break;
        }
    }
    fclose(f);
    symbolize_syms_sort(c->ksyms, c->nksyms);
    for (size_t i = 0; i + 1 < c->nksyms; i++) /* kallsyms has no sizes: up to the next */
        c->ksyms[i].size = c->ksyms[i + 1].addr - c->ksyms[i].addr;
}

int symcache_kernel(struct symcache *c, uint64_t addr, char *buf, size_t len)
{
    const struct symbolize_sym *k;

    if (!c->kloaded)
        kernel_load(c);
    k = symbolize_syms_find(c->ksyms, c->nksyms, addr);
    snprintf(buf, len, "%s", k ? k->name : "[kernel]");
    return k ? 0 : -ENOENT;
}
