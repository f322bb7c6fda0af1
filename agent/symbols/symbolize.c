/* ELF, maps, perf-map and kallsyms symbolization (see symbolize.h). */
#include "agent/symbols/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    uint64_t table_bytes; /* symbol and string tables read */
};

static _Thread_local uint64_t elf_opens_here;
static atomic_uint_fast64_t elf_opens_all;

uint64_t symbolize_elf_opens(int this_thread)
{
    return this_thread ? elf_opens_here : atomic_load(&elf_opens_all);
}

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
    GElf_Shdr strsh;

    e->table_bytes += sh->sh_size;
    if (gelf_getshdr(elf_getscn(e->elf, sh->sh_link), &strsh))
        e->table_bytes += strsh.sh_size;

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

    symbolize_syms_sort(e->syms, e->nsyms);
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
    elf_opens_here++;
    atomic_fetch_add(&elf_opens_all, 1);
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

uint64_t symbolize_elf_bytes(const struct symbolize_elf *e)
{
    return sizeof(*e) + e->nsyms * sizeof(*e->syms) + e->table_bytes;
}

void symbolize_syms_sort(struct symbolize_sym *syms, size_t n)
{
    if (n > 1) /* an ELF without function symbols has syms NULL: qsort wants an array */
        qsort(syms, n, sizeof(*syms), sym_cmp);
}

const struct symbolize_sym *symbolize_syms_find(const struct symbolize_sym *syms, size_t n,
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
    const struct symbolize_sym *s = symbolize_syms_find(e->syms, e->nsyms, vaddr);

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
