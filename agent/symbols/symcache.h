/* The stacks probe's symbol cache: sampled addresses to function names.
 *
 * User addresses go through the process's executable mappings
 * (/proc/PID/maps) to a file, and through that file's ELF symbols
 * (agent/symbols/symbolize.h) to a name; JIT code through /tmp/perf-PID.map; kernel
 * addresses through /proc/kallsyms (read once).
 *
 * Files are cached by identity, not by path: the key is the (device, inode)
 * of the mapping, so a library mapped by every rank of a job (libtorch_cpu,
 * libpython) is read once for all of them, whatever /proc/PID/root path it
 * was reached through. The cache is capped in bytes (symbolize_elf_bytes)
 * and in files; the least recently used files go first. The file in use is
 * never evicted, so one file larger than the cap is still kept (alone).
 *
 * A process's maps are read on first use and re-read when an address falls
 * outside all of them, at most once per reload interval: a garbage frame of
 * a broken user stack must not cost a /proc/PID/maps read (thousands of
 * lines in a PyTorch process) every time.
 *
 * Everything here blocks on file I/O: it runs on the stacks worker thread
 * (agent/probes/stacks_worker.h), never on the agent's main loop. Not thread-safe:
 * one thread owns a struct symcache. */
#ifndef ARGUS_AGENT_SYMCACHE_H
#define ARGUS_AGENT_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

#define SYMCACHE_DEFAULT_BYTES (256ull << 20)
#define SYMCACHE_DEFAULT_FILES 1024
#define SYMCACHE_DEFAULT_RELOAD_NS 1000000000ull

struct symcache_options {
    uint64_t cap_bytes; /* 0 = SYMCACHE_DEFAULT_BYTES */
    size_t max_files;   /* 0 = SYMCACHE_DEFAULT_FILES */
    uint64_t reload_ns; /* least time between two maps reads of a process; 0 = default */
};

struct symcache_stats {
    uint64_t files_loaded;  /* ELF files read (successfully or not) */
    uint64_t files_evicted; /* dropped by the cap */
    uint64_t maps_reads;    /* /proc/PID/maps reads */
    uint64_t bytes;         /* cached now */
    size_t files, procs;    /* cached now */
};

struct symcache;

/* o may be NULL (defaults). Returns NULL on allocation failure. */
struct symcache *symcache_new(const struct symcache_options *o);

/* Free everything; c may be NULL. */
void symcache_free(struct symcache *c);

/* Name of the user function at addr in process pid, whose files are read
 * through root (NULL = "/proc/PID/root"). Writes "name" (or "[module]+0xoff"
 * when the module has no symbol there, the mapping's name such as "[vdso]",
 * or "[unknown]") into buf. Returns 0 when a symbol was found, -ENOENT
 * otherwise (buf still set), -ENOMEM. */
int symcache_user(struct symcache *c, uint32_t pid, const char *root, uint64_t addr, char *buf,
                  size_t len);

/* Name of the kernel function at addr. Returns 0, or -ENOENT with
 * "[kernel]" in buf. */
int symcache_kernel(struct symcache *c, uint64_t addr, char *buf, size_t len);

/* Forget pid's maps and JIT symbols (it exited). Files stay cached. */
void symcache_forget(struct symcache *c, uint32_t pid);

void symcache_get_stats(const struct symcache *c, struct symcache_stats *out);

#endif
