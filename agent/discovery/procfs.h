/* The process table's readers of /proc (agent/discovery/discovery.c): a
 * whole small file, /proc/PID/stat, a pid directory name. No state, no log;
 * a vanished process reads as -ENOENT (ESRCH is folded into it). */
#ifndef ARGUS_AGENT_DISCOVERY_PROCFS_H
#define ARGUS_AGENT_DISCOVERY_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "agent/discovery/environ.h"

#define PROCFS_ROOT_MAX 256 /* bytes of a proc root path, with the NUL */

#define PROCFS_PF_KTHREAD 0x00200000u /* field 9: a kernel thread (no environ, no exe) */

struct proc_stat {
    uint32_t ppid;
    uint32_t flags;      /* field 9, PF_* */
    uint64_t start_time; /* field 22, clock ticks since boot */
    char state;          /* 'R', 'S', ..., 'Z' */
    char comm[DISCOVERY_COMM_MAX];
};

/* FNV-1a of n bytes (the table's change detector for environ and exe). */
uint64_t procfs_hash(const void *p, size_t n);

/* Read up to cap bytes of path into buf. Returns bytes read or -errno. */
ssize_t procfs_read_file(const char *path, char *buf, size_t cap);

/* Parse PROC_ROOT/PID/stat into st. Returns 0, -ENOENT when the process is
 * gone, -EINVAL for a line that does not parse, or another -errno. */
int procfs_read_stat(const char *proc_root, uint32_t pid, struct proc_stat *st);

/* Is PROC_ROOT/PID/ns/net the namespace own was stat'ed from (st_dev and
 * st_ino)? False when it is another, or cannot be read (gone, no ptrace
 * access, a fake tree). */
bool procfs_same_netns(const char *proc_root, uint32_t pid, const struct stat *own);

/* A /proc directory name that is a pid (1..2^32-1, plain digits)? */
bool procfs_parse_pid(const char *name, uint32_t *pid);

#endif
