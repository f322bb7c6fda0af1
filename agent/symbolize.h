/* Symbols for the probes: ELF function symbols (.symtab and .dynsym, through
 * libelf), /proc/PID/maps, /tmp/perf-PID.map (JITs) and /proc/kallsyms.
 *
 * Two users: the uprobe probes turn a symbol name into the file offset to
 * attach to (symbolize_elf_file_offset), and the stacks probe turns sampled
 * addresses into function names (symbolize_user, symbolize_kernel).
 * Nothing here is thread-safe: one struct symbolize per thread. */
#ifndef ARGUS_AGENT_SYMBOLIZE_H
#define ARGUS_AGENT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* One ELF file's function symbols, sorted by address. Opaque. */
struct symbolize_elf;

/* Open path and read its function symbols. Returns 0 and *out (free with
 * symbolize_elf_free), or -errno (-ENOENT, -ENOEXEC for a non-ELF file). */
int symbolize_elf_open(const char *path, struct symbolize_elf **out);
void symbolize_elf_free(struct symbolize_elf *elf);

/* Number of function symbols read (both tables, duplicates removed). */
size_t symbolize_elf_count(const struct symbolize_elf *elf);

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

/* One line of /proc/PID/maps. path is empty for anonymous mappings. */
struct symbolize_mapping {
    uint64_t start, end, file_offset;
    char perms[5];
    char path[256];
};

/* Parse one maps line ("start-end perms offset dev inode path"). Returns 0
 * or -EINVAL. Pure. */
int symbolize_parse_maps_line(const char *line, struct symbolize_mapping *m);

/* Parse one perf map line ("START SIZE name", hex without 0x). Returns 0 or
 * -EINVAL; name is truncated to namelen. Pure. */
int symbolize_parse_perf_map_line(const char *line, uint64_t *start, uint64_t *size, char *name,
                                  size_t namelen);

/* Per-process and kernel symbol caches. */
struct symbolize;

/* Returns NULL on allocation failure. */
struct symbolize *symbolize_new(void);
void symbolize_free(struct symbolize *s);

/* Name of the user function at addr in process pid, whose files are read
 * through root (NULL = "/proc/PID/root"). Writes "name" (or "[module]+0xoff"
 * when the module has no symbol there, or "[unknown]") into buf. Returns 0
 * when a symbol was found, -ENOENT otherwise (buf still set). Maps are read
 * on first use and re-read once when addr falls outside all of them. */
int symbolize_user(struct symbolize *s, uint32_t pid, const char *root, uint64_t addr, char *buf,
                   size_t len);

/* Forget what is cached about pid (it exited). */
void symbolize_forget(struct symbolize *s, uint32_t pid);

/* Name of the kernel function at addr from /proc/kallsyms (read once).
 * Returns 0, or -ENOENT with "[kernel]" in buf. */
int symbolize_kernel(struct symbolize *s, uint64_t addr, char *buf, size_t len);

#endif
