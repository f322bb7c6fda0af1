/* The one reader of /proc/PID/maps: the kernel's list of a process's
 * mappings, one line each,
 *
 *     START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]
 *     7f00a000-7f00b000 r-xp 00002000 fd:01 1234   /usr/lib/libnccl.so.2
 *
 * read as struct procmaps_entry records. Users: the uprobe probes (which
 * libraries a rank maps, agent/probes/probe_common.h) and the symbol cache
 * (which file holds a sampled address, agent/symbols/symcache.h). Each
 * filters the records itself.
 *
 * PATH is what the kernel prints, up to the end of the line: it may hold
 * spaces, it is empty for an anonymous mapping, "[vdso]", "[heap]",
 * "[anon:NAME]" for special ones, and a file that was unlinked or replaced
 * since it was mapped ends in " (deleted)" (kept in path, and said by
 * `deleted`). In another mount namespace (a container) the path is the
 * process's own: open it through /proc/PID/root. Lines that do not parse
 * (a truncated last line cut inside the numbers) are skipped; a last line
 * without its newline is read like any other.
 *
 * A struct procmaps is used by one thread; the functions keep no global
 * state. Reading /proc/PID/maps blocks and costs (a PyTorch rank maps
 * ~1,700 lines): callers read it rarely and off the hot path. */
#ifndef ARGUS_AGENT_PROCMAPS_H
#define ARGUS_AGENT_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* One line of /proc/PID/maps. */
struct procmaps_entry {
    uint64_t start, end, file_offset;
    uint64_t dev, inode; /* dev = major << 32 | minor; both 0 for anonymous mappings */
    char perms[5];       /* "r-xp" */
    bool deleted;        /* path ends in " (deleted)" */
    char path[256];      /* as the kernel prints it, truncated to fit; "" when anonymous */
};

/* An open maps file being read. Callers keep it (e.g. on the stack) and
 * touch it only through the functions below. */
struct procmaps {
    /* private */
    FILE *f;
    char *line; /* getline buffer */
    size_t cap;
};

/* Open PROC_ROOT/PID/maps (proc_root NULL: "/proc"; tests point it at a
 * fake tree). Returns 0, or -errno from open (-ENOENT when the process is
 * gone, -ENAMETOOLONG for an over-long proc_root); pm is then closed. Close
 * with procmaps_close either way. */
int procmaps_open(struct procmaps *pm, const char *proc_root, uint32_t pid);

/* Open a maps file by its path (a saved copy, a test fixture). Returns 0 or
 * -errno, like procmaps_open. */
int procmaps_open_file(struct procmaps *pm, const char *path);

/* The next mapping, skipping lines that do not parse. Returns 1 with *e
 * filled, 0 at the end of the file, -errno on a read error (a process that
 * exited mid-read: -ESRCH). */
int procmaps_next(struct procmaps *pm, struct procmaps_entry *e);

/* Close the file and free the line buffer. Safe on a pm whose open failed,
 * and twice. */
void procmaps_close(struct procmaps *pm);

/* Parse one maps line (the trailing newline is optional). Returns 0, or
 * -EINVAL when the fields up to OFFSET are missing or START > END. Pure. */
int procmaps_parse_line(const char *line, struct procmaps_entry *e);

#endif
