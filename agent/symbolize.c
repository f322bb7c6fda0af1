/* ELF, maps, perf-map and kallsyms symbolization (see symbolize.h). */
#include "agent/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct symbolize_sym {
    uint64_t addr, size;
    const char *name; /* into the ELF's string table, or owned (perf map, kallsyms) */
};

struct symbolize_segment {
    uint64_t vaddr, file_offset, filesz;
};

struct symbolize_elf {
    int fd;
    Elf *elf;
    struct symbolize_sym *syms;
    size_t nsyms;
    struct symbolize_segment segs[16];
    size_t nsegs;
};

static int sym_cmp(const void *a, const void *b)
{
    const struct symbolize_sym *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return y->size < x->size ? -1 : y->size > x->size; /* larger first */
}

static int elf_push_sym(struct symbolize_elf *e, size_t *cap, uint64_t addr, uint64_t size,
                        const char *name)
{
    if (e->nsyms == *cap) {
        size_t ncap = *cap ? *cap * 2 : 1024;
        struct symbolize_sym *tmp = realloc(e->syms, ncap * sizeof(*tmp));

        if (!tmp)
            return -ENOMEM;
        e->syms = tmp;
        *cap = ncap;
    }
    e->syms[e->nsyms++] = (struct symbolize_sym){addr, size, name};
    return 0;
}

static int elf_read_table(struct symbolize_elf *e, Elf_Scn *scn, GElf_Shdr *sh, size_t *cap)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

    for (size_t i = 0; data && i < n; i++) {
        GElf_Sym sym;
        const char *name;
        int type;

        if (!gelf_getsym(data, (int)i, &sym))
            continue;
        type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
            !sym.st_value)
            continue;
        name = elf_strptr(e->elf, sh->sh_link, sym.st_name);
        if (!name || !*name)
            continue;
        if (elf_push_sym(e, cap, sym.st_value, sym.st_size, name) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int elf_read_segments(struct symbolize_elf *e)
{
    size_t nph;

    if (elf_getphdrnum(e->elf, &nph) != 0)
        return -ENOEXEC;
    for (size_t i = 0; i < nph && e->nsegs < 16; i++) {
        GElf_Phdr ph;

        if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        e->segs[e->nsegs++] = (struct symbolize_segment){ph.p_vaddr, ph.p_offset, ph.p_filesz};
    }
    return 0;
}

/* Sort by address and drop exact duplicates (.symtab and .dynsym overlap). */
static void elf_sort_syms(struct symbolize_elf *e)
{
    size_t out = 0;

    qsort(e->syms, e->nsyms, sizeof(*e->syms), sym_cmp);
    for (size_t i = 0; i < e->nsyms; i++) {
        if (out && e->syms[out - 1].addr == e->syms[i].addr &&
            !strcmp(e->syms[out - 1].name, e->syms[i].name))
            continue;
        e->syms[out++] = e->syms[i];
    }
    e->nsyms = out;
}

int symbolize_elf_open(const char *path, struct symbolize_elf **out)
{
    struct symbolize_elf *e = calloc(1, sizeof(*e));
    Elf_Scn *scn = NULL;
    size_t cap = 0;
    int err = -ENOMEM;

    if (!e)
        return -ENOMEM;
    elf_version(EV_CURRENT);
    e->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (e->fd < 0) {
        err = -errno;
        goto fail;
    }
    err = -ENOEXEC;
    e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
    if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || elf_read_segments(e) < 0)
        goto fail;
    while ((scn = elf_nextscn(e->elf, scn))) {
        GElf_Shdr sh;

        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
            continue;
        err = elf_read_table(e, scn, &sh, &cap);
        if (err < 0)
            goto fail;
    }
    elf_sort_syms(e);
    *out = e;
    return 0;
fail:
    symbolize_elf_free(e);
    return err;
}

void symbolize_elf_free(struct symbolize_elf *e)
{
    if (!e)
        return;
    if (e->elf)
        elf_end(e->elf);
    if (e->fd >= 0)
        close(e->fd);
    free(e->syms);
    free(e);
}

size_t symbolize_elf_count(const struct symbolize_elf *e)
{
    return e->nsyms;
}

static const struct symbolize_sym *syms_find(const struct symbolize_sym *syms, size_t n,
                                             uint64_t addr)
{
    size_t lo = 0, hi = n;

    while (lo < hi) { /* first symbol with start > addr */
        size_t mid = lo + (hi - lo) / 2;

        if (syms[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Walk back over symbols starting at or before addr: the nearest one
     * that contains addr (nested or aliased symbols share a start). */
    for (size_t i = lo; i-- > 0 && lo - i <= 8;) {
        const struct symbolize_sym *s = &syms[i];

        if (addr == s->addr || addr - s->addr < s->size)
            return s;
    }
    return NULL;
}

const char *symbolize_elf_lookup(const struct symbolize_elf *e, uint64_t vaddr, uint64_t *offset)
{
    const struct symbolize_sym *s = syms_find(e->syms, e->nsyms, vaddr);

    if (!s)
        return NULL;
    if (offset)
        *offset = vaddr - s->addr;
    return s->name;
}

int symbolize_elf_file_offset(const struct symbolize_elf *e, const char *name,
                              uint64_t *file_offset)
{
    size_t len = strlen(name);
    int prefix = len && name[len - 1] == '*';

    for (size_t i = 0; i < e->nsyms; i++) {
        const struct symbolize_sym *s = &e->syms[i];

        if (prefix ? strncmp(s->name, name, len - 1) : strcmp(s->name, name))
            continue;
        for (size_t j = 0; j < e->nsegs; j++) {
            const struct symbolize_segment *g = &e->segs[j];

            if (s->addr >= g->vaddr && s->addr < g->vaddr + g->filesz) {
                *file_offset = s->addr - g->vaddr + g->file_offset;
                return 0;
            }
        }
        *file_offset = s->addr; /* no segment: relocatable object, as libbpf does */
        return 0;
    }
    return -ENOENT;
}

int symbolize_elf_offset_to_vaddr(const struct symbolize_elf *e, uint64_t file_offset,
                                  uint64_t *vaddr)
{
    for (size_t j = 0; j < e->nsegs; j++) {
        const struct symbolize_segment *g = &e->segs[j];

        if (file_offset >= g->file_offset && file_offset < g->file_offset + g->filesz) {
            *vaddr = file_offset - g->file_offset + g->vaddr;
            return 0;
        }
    }
    return -ERANGE;
}

int symbolize_parse_maps_line(const char *line, struct symbolize_mapping *m)
{
    unsigned long long start, end, off;
    int pathpos = 0;

    memset(m, 0, sizeof(*m));
    if (sscanf(line, "%llx-%llx %4s %llx %*s %*u %n", &start, &end, m->perms, &off, &pathpos) < 4 ||
        end < start)
        return -EINVAL;
    m->start = start;
    m->end = end;
    m->file_offset = off;
    if (pathpos > 0) {
        size_t n = strcspn(line + pathpos, "\n");

        if (n >= sizeof(m->path))
            n = sizeof(m->path) - 1;
        memcpy(m->path, line + pathpos, n);
    }
    return 0;
}

int symbolize_parse_perf_map_line(const char *line, uint64_t *start, uint64_t *size, char *name,
                                  size_t namelen)
{
    unsigned long long a, b;
    int pos = 0;
    size_t n;

    if (sscanf(line, "%llx %llx %n", &a, &b, &pos) < 2 || pos <= 0 || !line[pos] ||
        line[pos] == '\n' || !namelen)
        return -EINVAL;
    n = strcspn(line + pos, "\n");
    if (n >= namelen)
        n = namelen - 1;
    memcpy(name, line + pos, n);
    name[n] = '\0';
    *start = a;
    *size = b;
    return 0;
}

/* --- per-process caches ---------------------------------------------------- */

struct symbolize_module {
    char path[300];            /* as opened, through the process root */
    struct symbolize_elf *elf; /* NULL when it could not be read */
};

struct symbolize_proc {
    uint32_t pid;
    struct symbolize_mapping *maps;
    size_t nmaps;
    struct symbolize_sym *jit; /* /tmp/perf-PID.map, sorted, names owned */
    size_t njit;
    int loaded;
};

struct symbolize {
    struct symbolize_proc *procs;
    size_t nprocs;
    struct symbolize_module *modules;
    size_t nmodules;
    struct symbolize_sym *ksyms; /* names owned */
    size_t nksyms;
    int kloaded;
};

struct symbolize *symbolize_new(void)
{
    return calloc(1, sizeof(struct symbolize));
}

static void proc_clear(struct symbolize_proc *p)
{
    free(p->maps);
    for (size_t i = 0; i < p->njit; i++)
        free((char *)p->jit[i].name);
    free(p->jit);
    p->maps = NULL;
    p->jit = NULL;
    p->nmaps = p->njit = 0;
    p->loaded = 0;
}

void symbolize_free(struct symbolize *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nprocs; i++)
        proc_clear(&s->procs[i]);
    free(s->procs);
    for (size_t i = 0; i < s->nmodules; i++)
        symbolize_elf_free(s->modules[i].elf);
    free(s->modules);
    for (size_t i = 0; i < s->nksyms; i++)
        free((char *)s->ksyms[i].name);
    free(s->ksyms);
    free(s);
}

void symbolize_forget(struct symbolize *s, uint32_t pid)
{
    for (size_t i = 0; i < s->nprocs; i++) {
        if (s->procs[i].pid != pid)
            continue;
        proc_clear(&s->procs[i]);
        s->procs[i] = s->procs[--s->nprocs];
        return;
    }
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

static void proc_load_jit(struct symbolize_proc *p)
{
    char path[64], line[512], name[256];
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->pid);
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
    qsort(p->jit, p->njit, sizeof(*p->jit), sym_cmp);
}

static void proc_load(struct symbolize_proc *p)
{
    char path[64], line[512];
    FILE *f;

    proc_clear(p);
    p->loaded = 1;
    snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
    f = fopen(path, "re");
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            struct symbolize_mapping m;

            if (symbolize_parse_maps_line(line, &m) == 0 && strchr(m.perms, 'x') &&
                array_push((void **)&p->maps, &p->nmaps, sizeof(m), &m) < 0)
                break;
        }
        fclose(f);
    }
    proc_load_jit(p);
}

static struct symbolize_proc *proc_get(struct symbolize *s, uint32_t pid)
{
    struct symbolize_proc fresh = {.pid = pid};

    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid)
            return &s->procs[i];
    if (array_push((void **)&s->procs, &s->nprocs, sizeof(fresh), &fresh) < 0)
        return NULL;
    return &s->procs[s->nprocs - 1];
}

static struct symbolize_elf *module_get(struct symbolize *s, const char *path)
{
    struct symbolize_module m = {0};

    for (size_t i = 0; i < s->nmodules; i++)
        if (!strcmp(s->modules[i].path, path))
            return s->modules[i].elf;
    snprintf(m.path, sizeof(m.path), "%s", path);
    if (symbolize_elf_open(path, &m.elf) < 0)
        m.elf = NULL;
    if (array_push((void **)&s->modules, &s->nmodules, sizeof(m), &m) < 0) {
        symbolize_elf_free(m.elf);
        return NULL;
    }
    return m.elf;
}

static const struct symbolize_mapping *proc_find_map(const struct symbolize_proc *p, uint64_t addr)
{
    for (size_t i = 0; i < p->nmaps; i++)
        if (addr >= p->maps[i].start && addr < p->maps[i].end)
            return &p->maps[i];
    return NULL;
}

static int module_symbolize(struct symbolize *s, uint32_t pid, const char *root,
                            const struct symbolize_mapping *m, uint64_t addr, char *buf, size_t len)
{
    char path[300];
    struct symbolize_elf *elf;
    uint64_t vaddr, off;
    const char *name = NULL, *base = strrchr(m->path, '/');

    if (root)
        snprintf(path, sizeof(path), "%s%s", root, m->path);
    else
        snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
    elf = module_get(s, path);
    if (elf && symbolize_elf_offset_to_vaddr(elf, addr - m->start + m->file_offset, &vaddr) == 0)
        name = symbolize_elf_lookup(elf, vaddr, &off);
    if (name) {
        snprintf(buf, len, "%s", name);
        return 0;
    }
    snprintf(buf, len, "[%s]+0x%" PRIx64, base ? base + 1 : m->path,
             addr - m->start + m->file_offset);
    return -ENOENT;
}

int symbolize_user(struct symbolize *s, uint32_t pid, const char *root, uint64_t addr, char *buf,
                   size_t len)
{
    struct symbolize_proc *p = proc_get(s, pid);
    const struct symbolize_mapping *m = NULL;
    const struct symbolize_sym *jit;

    snprintf(buf, len, "[unknown]");
    if (!p)
        return -ENOMEM;
    for (int pass = 0; pass < 2 && !m; pass++) {
        if (!p->loaded || pass == 1)
            proc_load(p);
        m = proc_find_map(p, addr);
        jit = syms_find(p->jit, p->njit, addr);
        if (jit && (!m || !m->path[0] || m->path[0] == '[')) {
            snprintf(buf, len, "%s", jit->name);
            return 0;
        }
    }
    if (m && m->path[0] == '[') /* [vdso], [anon:...] */
        snprintf(buf, len, "%s", m->path);
    if (!m || m->path[0] != '/')
        return -ENOENT;
    return module_symbolize(s, pid, root, m, addr, buf, len);
}

static void kernel_load(struct symbolize *s)
{
    char line[512], name[256], type;
    unsigned long long addr;
    FILE *f = fopen("/proc/kallsyms", "re");

    s->kloaded = 1;
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        struct symbolize_sym sym = {0};

        if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr ||
            (type != 't' && type != 'T'))
            continue;
        sym.addr = addr;
        sym.name = strdup(name);
        if (!sym.name || array_push((void **)&s->ksyms, &s->nksyms, sizeof(sym), &sym) < 0) {
            free((char *)sym.name);
            break;
        }
    }
    fclose(f);
    qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), sym_cmp);
    for (size_t i = 0; i + 1 < s->nksyms; i++) /* kallsyms has no sizes: up to the next */
        s->ksyms[i].size = s->ksyms[i + 1].addr - s->ksyms[i].addr;
}

int symbolize_kernel(struct symbolize *s, uint64_t addr, char *buf, size_t len)
{
    const struct symbolize_sym *k;

    if (!s->kloaded)
        kernel_load(s);
    k = syms_find(s->ksyms, s->nksyms, addr);
    snprintf(buf, len, "%s", k ? k->name : "[kernel]");
    return k ? 0 : -ENOENT;
}
