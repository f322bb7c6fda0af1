/* agent/symbols/: names for code. Takes in the files a process maps (its
 * /proc/PID/maps, read by procmaps.h, and the ELF files themselves through
 * /proc/PID/root), JIT perf maps (/tmp/perf-PID.map) and /proc/kallsyms;
 * gives out, for the uprobe probes, the file offset of a named function
 * (symbolize_elf_file_offset), and for the stacks probe, the function name
 * of a sampled user or kernel address (symcache.h, a cache by file identity
 * on the stacks worker thread). Three modules: symbolize (this header: ELF
 * symbols and perf-map lines), procmaps (the /proc/PID/maps reader) and
 * symcache.
 *
 * This module: ELF function symbols (.symtab and .dynsym, through libelf),
 * sorted symbol arrays, and the line format of /tmp/perf-PID.map. A struct
 * symbolize_elf is used by one thread at a time; the functions keep no
 * global state except the counters of symbolize_elf_opens(). */
#ifndef ARGUS_AGENT_SYMBOLIZE_H
#define ARGUS_AGENT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* A function symbol. name points into an ELF's string table (valid while
 * the symbolize_elf lives) or is owned by whoever built the array. */
struct symbolize_sym {
    uint64_t addr, size;
    const char *name;
};

/* Sort syms by address, larger first among equal starts (pure). */
void symbolize_syms_sort(struct symbolize_sym *syms, size_t n);

/* The symbol of a sorted array containing addr: the nearest start at or
 * below it whose size covers it (a size of 0 matches only its own address).
 * NULL when none does. Pure. */
const struct symbolize_sym *symbolize_syms_find(const struct symbolize_sym *syms, size_t n,
                                                uint64_t addr);

/* One ELF file's function symbols, sorted by address. Opaque. */
struct symbolize_elf;

/* Open path and read its function symbols. Returns 0 and *out (free with
 * symbolize_elf_free), or -errno (-ENOENT, -ENOEXEC for a non-ELF file). */
int symbolize_elf_open(const char *path, struct symbolize_elf **out);
void symbolize_elf_free(struct symbolize_elf *elf);

/* Number of function symbols read (both tables, duplicates removed). */
size_t symbolize_elf_count(const struct symbolize_elf *elf);

/* What holding elf costs in memory: its symbol array plus the symbol and
 * string tables it reads through the file mapping. */
uint64_t symbolize_elf_bytes(const struct symbolize_elf *elf);

/* How many times symbolize_elf_open() read a file: in the calling thread
 * (this_thread) or in the whole process. Lets tests check that a thread
 * (the agent's main loop) never loads symbols. */
uint64_t symbolize_elf_opens(int this_thread);

/* The function containing ELF virtual address vaddr: its name (valid while
 * elf lives) and *offset = vaddr - start. NULL when none contains it. A
 * symbol of size 0 matches only its own address. */
const char *symbolize_elf_lookup(const struct symbolize_elf *elf, uint64_t vaddr, uint64_t *offset);

/* The file offset of the defined function `name` (the exact, possibly
 * mangled name), as uprobes want it. A name ending in '*' is a prefix: the
 * lowest-addressed match is taken (one overload of a C++ method whose
 * parameter types vary between versions). Returns 0, or -ENOENT. */
int symbolize_elf_file_offset(const struct symbolize_elf *elf, const char *name,
                              uint64_t *file_offset);

/* Translate a file offset inside a loadable segment to its ELF virtual
 * address. Returns 0, or -ERANGE when no PT_LOAD segment holds it. */
int symbolize_elf_offset_to_vaddr(const struct symbolize_elf *elf, uint64_t file_offset,
                                  uint64_t *vaddr);

/* Parse one perf map line ("START SIZE name", hex without 0x). Returns 0 or
 * -EINVAL; name is truncated to namelen. Pure. */
int symbolize_parse_perf_map_line(const char *line, uint64_t *start, uint64_t *size, char *name,
                                  size_t namelen);

#endif
